/** A ZitiQL string literal for `value`, for filters built in code (`id in [${ids.map(zitiqlString)}]`). */
export function zitiqlString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
