// The merge loop BPE and SentencePiece share (as llama.cpp's tokenizer sessions do it): the
// symbols of a word form a doubly linked list and every adjacent pair that makes a token is a
// candidate in a priority queue. The best pair merges its right symbol into its left one and
// the new neighbouring pairs are queued; a pair queued before one of its sides changed is
// stale and skipped. The queue's order is the tokenizer's (BPE: merge rank, SPM: score).
#pragma once
#include <queue>
#include <vector>

namespace minfer::tok::detail {

// add_bigram(left, right) queues the pair when it makes a token (either index may be -1);
// on_merge(symbol, bigram) updates what the tokenizer tracks beyond the byte range.
template <class Symbol, class Bigram, class Order, class AddBigram, class OnMerge>
void merge_symbols(std::vector<Symbol>& symbols,
                   std::priority_queue<Bigram, std::vector<Bigram>, Order>& queue,
                   AddBigram&& add_bigram, OnMerge&& on_merge) {
  for (int i = 1; i < int(symbols.size()); ++i) add_bigram(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
    l.n += r.n;
    on_merge(l, b);
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    add_bigram(l.prev, b.left);
    add_bigram(b.left, l.next);
  }
}

}  // namespace minfer::tok::detail
