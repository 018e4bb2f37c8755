-- While a consumer rebuilds its read models from the owner's state read at position P, its batches
-- skip events at or below P (the rebuild covers them): an event applied after the rebuild's page
-- could otherwise create a row the page already knew was gone (docs/adr/0008).
alter table event_cursors add column resync_position bigint;
