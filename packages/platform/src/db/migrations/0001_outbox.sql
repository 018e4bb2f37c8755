-- Events leave a service through this table, written in the same transaction as the change.
create table outbox (
  id bigserial primary key,
  subject text not null,
  type text not null,
  version integer not null,
  payload jsonb not null,
  created_at timestamptz not null default now(),
  published_at timestamptz
);
create index outbox_unpublished on outbox (id) where published_at is null;

-- Events this service has consumed, per consumer: makes handlers idempotent under redelivery.
create table processed_events (
  consumer text not null,
  event_id text not null,
  processed_at timestamptz not null default now(),
  primary key (consumer, event_id)
);
