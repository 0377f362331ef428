/** The two bounds of a list page. */
export interface PageBounds {
  /** At most this many items. */
  items: number;
  /** At most this many By-Value bytes, except that a page always holds its first item. */
  bytes: number;
}

/**
 * The items a page sends, from the first ones of the list (read one beyond `bounds.items`, to
 * know whether the list goes on): at most `bounds.items`, and it stops before the item whose
 * By-Value bytes would take it past `bounds.bytes`. The first item always goes, so an item
 * larger than the bound goes out alone rather than stalling the list.
 */
export function cutPage<Item>(items: readonly Item[], bounds: PageBounds, byValueBytes: (item: Item) => number): Item[] {
  const page: Item[] = [];
  let bytes = 0;
  for (const item of items) {
    if (page.length === bounds.items) break;
    const size = byValueBytes(item);
    if (page.length > 0 && bytes + size > bounds.bytes) break;
    bytes += size;
    page.push(item);
  }
  return page;
}
