/** "1 commit", "3 commits"; `many` where the plural is not the noun and an "s". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
