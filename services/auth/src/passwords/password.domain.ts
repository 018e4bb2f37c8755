/** Password rules of the spec (ZITI-FACTS §7.1 / seed §8): 5..100 characters; usernames 4..100. */
export const passwordLimits = { min: 5, max: 100 } as const;
export const usernameLimits = { min: 4, max: 100 } as const;
