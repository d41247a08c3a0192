// text/spm.cpp — SentencePiece encoding (GGUF `tokenizer.ggml.model = llama`), the
// algorithm llama.cpp runs for SPM vocabularies: characters start as symbols; the
// adjacent pair whose concatenation is a token with the highest score merges next
// (leftmost on equal scores), until no pair is a token. A priority queue of candidate
// pairs with lazy deletion keeps this O(n log n) instead of rescanning all pairs after
// each merge (quadratic on long inputs).
#include <queue>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace squeeze::text {

namespace {

// Bytes of the UTF-8 character a lead byte announces, the way llama.cpp counts them
// (by the high nibble, not validated): a stray continuation byte is a character of its
// own, a truncated sequence stops at the end of the text. Matching this keeps symbol
// boundaries identical on invalid UTF-8.
size_t char_length(unsigned char lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

struct Symbol {
  size_t offset, length;  // bytes in the escaped text; length 0 = merged away
  int32_t prev, next;
};

struct Bigram {
  float score;
  int32_t left, right;
  size_t length;  // bytes of the pair when queued: a mismatch later means it is stale
  bool operator<(const Bigram& o) const {  // std::priority_queue pops the largest
    return score != o.score ? score < o.score : left > o.left;
  }
};

}  // namespace

void Tokenizer::encode_spm(std::string_view raw, bool after_special, std::vector<int32_t>& out) const {
  // Normalise: every space becomes U+2581, and one more goes in front when asked for.
  static const std::string kSpace = "\xE2\x96\x81";
  if (raw.empty()) return;  // llama.cpp makes no fragment of empty text: no prefix either
  std::string text;
  text.reserve(raw.size() + 8);
  if (add_space_prefix_ && after_special) text += kSpace;
  for (char c : raw) {
    if (c == ' ') text += kSpace;
    else text += c;
  }

  std::vector<Symbol> sym;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = std::min(char_length(static_cast<unsigned char>(text[pos])), text.size() - pos);
    const auto i = static_cast<int32_t>(sym.size());
    sym.push_back({pos, len, i - 1, -1});
    if (i > 0) sym[i - 1].next = i;
    pos += len;
  }

  std::priority_queue<Bigram> queue;
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const std::string_view pair(text.data() + sym[left].offset, sym[left].length + sym[right].length);
    auto it = text_to_id_.find(pair);
    if (it == text_to_id_.end()) return;
    queue.push({scores_[it->second], left, right, pair.size()});
  };
  for (size_t i = 1; i < sym.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    // Stale: one side has merged with something else since this pair was queued.
    if (l.length == 0 || r.length == 0 || l.length + r.length != b.length) continue;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const std::string_view piece(text.data() + sym[i].offset, sym[i].length);
    auto it = text_to_id_.find(piece);
    if (it != text_to_id_.end()) {
      out.push_back(it->second);
      continue;
    }
    // Not in the vocabulary (only single characters get here): byte fallback.
    for (unsigned char c : piece) {
      if (byte_token_[c] >= 0) {
        out.push_back(byte_token_[c]);
      } else {
        SQZ_CHECK(unk_ >= 0, "tokenizer: byte ", int(c), " has no token and there is no unknown token");
        out.push_back(unk_);
      }
    }
  }
}

}  // namespace squeeze::text
