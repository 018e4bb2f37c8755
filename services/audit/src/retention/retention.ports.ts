/** What the retention sweeper removes. */
export interface RetentionStore {
  /**
   * Deletes up to `limit` records made before `cutoff`, oldest first, skipping rows another replica is
   * deleting at the same moment; returns how many it deleted.
   */
  deleteRecordsBefore(cutoff: Date, limit: number): Promise<number>;
  /** Deletes tombstones that no event still to be applied can need (see the entity states). */
  pruneTombstones(olderThanSeconds: number): Promise<number>;
}
