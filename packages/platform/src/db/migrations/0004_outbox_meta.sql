-- The request an event was written on behalf of (who, from where, which request and operation;
-- contracts' RequestMeta): the audit trail and the event stream name the actor from it.
alter table outbox add column meta jsonb;
