-- Event positions (docs/adr/0008). Each service numbers its events 1, 2, 3, … in commit order:
-- the row below is updated by the last statement of every transaction that emits events, so its
-- lock is held until that transaction commits and the next one continues after it. A position is
-- therefore dense, unique and ordered like the commits of the owner.
create table event_position (
  id integer primary key check (id = 1),
  last bigint not null
);
insert into event_position (id, last) values (1, coalesce((select max(id) from outbox), 0));

alter table outbox add column position bigint;
update outbox set position = id;
alter table outbox alter column position set not null;
create unique index outbox_position on outbox (position);
drop index outbox_unpublished;
create index outbox_unpublished on outbox (position) where published_at is null;

-- How far each consumer of this service has applied each source's events: every position up to
-- `watermark`, plus the positions in `applied` above it (delivered out of order). Replaces
-- processed_events: a redelivered event is recognised by its position.
create table event_cursors (
  consumer text not null,
  source text not null,
  watermark bigint not null default 0,
  applied bigint[] not null default '{}',
  -- since when a position above the watermark has been missing (a gap that outlives the stream
  -- triggers a resync from the owner's state)
  gap_since timestamptz,
  -- the read models of this consumer must be (re)built from the owner's current state
  resync_required boolean not null default true,
  resynced_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (consumer, source)
);

-- Events a consumer could not process: an unknown type or version (a newer producer), or a
-- handler that kept failing. Kept, counted and retried on start, never silently dropped.
create table parked_events (
  consumer text not null,
  source text not null,
  position bigint not null,
  type text not null,
  version integer not null,
  reason text not null,
  envelope jsonb not null,
  parked_at timestamptz not null default now(),
  primary key (consumer, source, position)
);

drop table processed_events;
