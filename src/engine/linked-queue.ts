export interface Link<V> {
  readonly value: V;
  prev: Link<V> | undefined;
  next: Link<V> | undefined;
}

/**
 * FIFO with O(1) removal of any element, for cancelled and expired requests. Hand-written because
 * a Set used as a queue skips its deleted slots again on every pass until V8 rehashes it, which
 * makes taking a batch off a long queue cost time proportional to the queue.
 */
export class LinkedQueue<V> {
  private head: Link<V> | undefined;
  private tail: Link<V> | undefined;
  size = 0;

  push(value: V): Link<V> {
    const link: Link<V> = { value, prev: this.tail, next: undefined };
    if (this.tail) this.tail.next = link;
    else this.head = link;
    this.tail = link;
    this.size++;
    return link;
  }

  remove(link: Link<V>): void {
    if (link.prev) link.prev.next = link.next;
    else this.head = link.next;
    if (link.next) link.next.prev = link.prev;
    else this.tail = link.prev;
    link.prev = undefined;
    link.next = undefined;
    this.size--;
  }

  /** Shows `visit` the values in order until it returns false, which visit then returns; it must remove none. */
  visit(visit: (value: V) => boolean): boolean {
    for (let link = this.head; link; link = link.next) if (!visit(link.value)) return false;
    return true;
  }

  /** In order; the value just yielded may be removed before the iteration continues. */
  *[Symbol.iterator](): Iterator<V> {
    for (let link = this.head; link; ) {
      const next = link.next;
      yield link.value;
      link = next;
    }
  }
}
