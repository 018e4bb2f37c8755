-- The writes a caller sent with an Idempotency-Key (db/idempotency.ts): claimed in the transaction of
-- the write's first unit of work, answered from `reply` when the caller repeats the key. Kept a day.
create table idempotent_requests (
  caller text not null,
  key text not null,
  operation text not null,
  -- sha256 of the operation and its input: the same key with other input is refused
  fingerprint text not null,
  -- the answer, once given; null while in progress, or when it held a secret and was not kept
  reply jsonb,
  claimed_at timestamptz not null default now(),
  primary key (caller, key)
);
create index idempotent_requests_claimed_at on idempotent_requests (claimed_at);
