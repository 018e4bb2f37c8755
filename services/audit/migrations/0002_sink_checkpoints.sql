-- The position each event sink (docs/extensions.md, "Event sinks") has delivered audit's feed up to,
-- by sink (its durable's name, e.g. `audit-sink-webhook`): kept here rather than in a file of one
-- process so that every audit replica can run the sink, reading it before each batch. It never moves
-- back: a save keeps the greater position.
create table sink_checkpoints (
  name text primary key,
  position bigint not null check (position >= 0),
  updated_at timestamptz not null default now()
);
