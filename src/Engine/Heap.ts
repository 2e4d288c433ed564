/**
 * A binary min-heap of deadlines (epoch ms) with lazy invalidation by version: a changed deadline
 * is pushed again and the old entry skipped when it surfaces. The owner calls `rebuild` when stale
 * entries pile up (a monitor pinged every second moves its deadline every second).
 */
export interface HeapEntry {
  readonly at: number
  readonly key: string
  readonly version: number
}

export class DeadlineHeap {
  private items: Array<HeapEntry> = []

  get size(): number {
    return this.items.length
  }

  peek(): HeapEntry | undefined {
    return this.items[0]
  }

  push(entry: HeapEntry): void {
    const items = this.items
    items.push(entry)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent]!.at <= entry.at) break
      items[i] = items[parent]!
      i = parent
    }
    items[i] = entry
  }

  /** Replaces the contents with `entries` (heapified in O(n)). */
  rebuild(entries: Array<HeapEntry>): void {
    this.items = entries
    for (let start = (entries.length >> 1) - 1; start >= 0; start--) siftDown(entries, start, entries[start]!)
  }

  pop(): HeapEntry | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (top === undefined || last === undefined || items.length === 0) return top
    siftDown(items, 0, last)
    return top
  }
}

/** Puts `entry` at slot `i` and moves it down past every earlier child: the heap order below `i`. */
const siftDown = (items: Array<HeapEntry>, i: number, entry: HeapEntry): void => {
  const n = items.length
  for (;;) {
    const left = 2 * i + 1
    if (left >= n) break
    const right = left + 1
    const child = right < n && items[right]!.at < items[left]!.at ? right : left
    if (items[child]!.at >= entry.at) break
    items[i] = items[child]!
    i = child
  }
  items[i] = entry
}
