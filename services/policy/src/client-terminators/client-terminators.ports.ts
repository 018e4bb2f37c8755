/** Whether a caller may see a service (policy's derived access). */
export interface ServiceVisibility {
  serviceVisible(serviceId: string, identityId: string, isAdmin: boolean): Promise<boolean>;
}

/** inventory's terminators of a service, as the client API shows them (a list envelope). */
export interface TerminatorCatalog {
  forClient(
    serviceId: string,
    list: { filter?: string; limit?: string; offset?: string; sort?: string },
  ): Promise<unknown>;
}
