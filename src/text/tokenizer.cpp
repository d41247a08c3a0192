// text/tokenizer.cpp — see tokenizer.h.
#include "text/tokenizer.h"

#include <algorithm>
#include <array>
#include <queue>

#include "core/error.h"
#include "text/unicode.h"

namespace squeeze::text {

namespace {

struct ByteAlphabet {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 324> to_byte;  // code points 0..323 cover the alphabet; -1 = none
  ByteAlphabet() {
    to_byte.fill(-1);
    auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const int cp = printable(b) ? b : next++;
      append_utf8(to_unicode[b], static_cast<uint32_t>(cp));
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

// Stored (alphabet) text → raw bytes. Characters outside the alphabet are kept as their
// own UTF-8 (some vocabularies carry a few such tokens; they never arise from bytes).
std::string unmap_text(std::string_view stored) {
  std::string out;
  out.reserve(stored.size());
  for (size_t pos = 0; pos < stored.size();) {
    const CodeUnit u = decode_utf8_at(stored, pos);
    const auto b = gpt2_unicode_to_byte(u.cp);
    if (b) {
      out += static_cast<char>(*b);
    } else {
      out.append(stored.substr(pos, u.length));
    }
    pos += u.length;
  }
  return out;
}

// "<0x4A>" → 0x4A (SentencePiece-style byte tokens, token type 6).
std::optional<uint8_t> parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return std::nullopt;
  int v = 0;
  for (char c : t.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return std::nullopt;
  }
  return static_cast<uint8_t>(v);
}

// SentencePiece stores spaces as U+2581 "▁".
std::string spm_unescape(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size();) {
    if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 3;
    } else {
      out += t[i++];
    }
  }
  return out;
}

}  // namespace

void Tokenizer::add_special(const std::string& text, int32_t id) {
  int32_t node = 0;
  for (unsigned char c : text) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | c;
    auto [it, inserted] = trie_.try_emplace(key, static_cast<int32_t>(trie_token_.size()));
    if (inserted) trie_token_.push_back(-1);
    node = it->second;
  }
  if (trie_token_[node] < 0) trie_token_[node] = id;  // the first of duplicate texts wins
}

const std::string& gpt2_byte_to_unicode(uint8_t b) { return alphabet().to_unicode[b]; }

std::optional<uint8_t> gpt2_unicode_to_byte(uint32_t cp) {
  if (cp >= alphabet().to_byte.size() || alphabet().to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(alphabet().to_byte[cp]);
}

std::string gpt2_encode_bytes(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) out += gpt2_byte_to_unicode(b);
  return out;
}

int32_t Tokenizer::intern(const std::string& bytes) {
  auto [it, inserted] = sym_of_bytes_.try_emplace(bytes, static_cast<int32_t>(sym_bytes_.size()));
  if (inserted) {
    sym_bytes_.push_back(bytes);
    sym_token_.push_back(-1);
  }
  return it->second;
}

namespace {
// Which way encoding can produce a token of this type: 0 by BPE (or byte fallback), 1 by
// the special-token matcher, -1 never.
int encodable_class(TokenType t) {
  switch (t) {
    case TokenType::normal:
    case TokenType::undefined:
    case TokenType::byte: return 0;
    case TokenType::control:
    case TokenType::user_defined: return 1;
    case TokenType::unknown:
    case TokenType::unused: return -1;
  }
  return -1;
}
}  // namespace

Tokenizer::Tokenizer(const TokenizerData& d)
    : spm_(d.model == "llama"), add_space_prefix_(d.model == "llama" && d.add_space_prefix),
      pre_(d.model == "llama" ? PreTokenizer::gpt2 : pre_tokenizer_from_name(d.pre)),
      bos_(d.bos_id), eos_(d.eos_id), pad_(d.pad_id), unk_(d.unk_id),
      add_bos_(d.add_bos), add_eos_(d.add_eos),
      ignore_merges_(d.ignore_merges || pre_tokenizer_ignores_merges(d.pre)) {
  normalizer_ = Normalizer(d.normalizer);
  SQZ_CHECK(d.model == "gpt2" || d.model == "llama", "tokenizer model '", d.model,
            "' is not supported (byte-level BPE 'gpt2' or SentencePiece 'llama')");
  SQZ_CHECK(!d.tokens.empty(), "tokenizer: the vocabulary is empty");
  SQZ_CHECK(d.tokens.size() < (1u << 31), "tokenizer: too many tokens");
  SQZ_CHECK(d.token_types.empty() || d.token_types.size() == d.tokens.size(), "tokenizer: ",
            d.token_types.size(), " token types for ", d.tokens.size(), " tokens");
  SQZ_CHECK(d.scores.empty() || d.scores.size() == d.tokens.size(), "tokenizer: ", d.scores.size(),
            " scores for ", d.tokens.size(), " tokens");
  SQZ_CHECK(!spm_ || d.merges.empty(), "tokenizer: a SentencePiece vocabulary has no merges");
  const auto n = static_cast<int64_t>(d.tokens.size());
  auto check_special = [&](int32_t id, const char* what) {
    SQZ_CHECK(id >= -1 && id < n, "tokenizer: ", what, " token id ", id, " is outside the vocabulary of ", n);
  };
  check_special(bos_, "BOS");
  check_special(eos_, "EOS");
  check_special(pad_, "padding");
  check_special(unk_, "unknown");
  SQZ_CHECK(!add_bos_ || bos_ >= 0, "tokenizer: add_bos is set but there is no BOS token");
  SQZ_CHECK(!add_eos_ || eos_ >= 0, "tokenizer: add_eos is set but there is no EOS token");

  for (int b = 0; b < 256; ++b) intern(std::string(1, static_cast<char>(b)));

  texts_ = d.tokens;
  types_.resize(d.tokens.size(), TokenType::normal);
  pieces_.resize(d.tokens.size());
  std::unordered_map<std::string, int32_t> seen[2];  // by encodable_class(): text -> first id
  scores_ = d.scores;
  scores_.resize(d.tokens.size(), 0.0f);
  byte_token_.fill(-1);
  for (int32_t id = 0; id < n; ++id) {
    const std::string& t = d.tokens[id];
    if (!d.token_types.empty()) {
      const int32_t ty = d.token_types[id];
      SQZ_CHECK(ty >= 0 && ty <= 6, "tokenizer: token ", id, " has unknown type ", ty);
      types_[id] = static_cast<TokenType>(ty);
    }
    // Two tokens that encoding could produce for the same text make its output depend on
    // which id wins: refused. Duplicates that encoding never produces (unused, unknown)
    // are tolerated, as are a special and a plain token of the same text (the special
    // matcher and BPE never compete for it). llama.cpp refuses every duplicate (an
    // assert), so files in use have none where it matters.
    if (const int cls = encodable_class(types_[id]); cls >= 0) {
      const auto [it, fresh] = seen[cls].try_emplace(t, id);
      SQZ_CHECK(fresh, "tokenizer: token '", t, "' appears twice in the vocabulary (ids ", it->second, " and ", id,
                "): encoding could not tell them apart");
    }
    text_to_id_.try_emplace(t, id);
    switch (types_[id]) {
      case TokenType::normal:
      case TokenType::undefined: {
        pieces_[id] = spm_ ? spm_unescape(t) : unmap_text(t);
        if (spm_ || pieces_[id].empty()) break;  // an empty token can never be produced by BPE
        const int32_t s = intern(pieces_[id]);
        if (sym_token_[s] < 0) sym_token_[s] = id;
        break;
      }
      case TokenType::byte: {
        const auto b = parse_byte_token(t);
        pieces_[id] = b ? std::string(1, static_cast<char>(*b)) : t;
        if (b && sym_token_[*b] < 0) sym_token_[*b] = id;
        if (b && byte_token_[*b] < 0) byte_token_[*b] = id;
        break;
      }
      case TokenType::control:
      case TokenType::user_defined:
      case TokenType::unknown:
        pieces_[id] = t;
        if (!t.empty()) add_special(t, id);
        break;
      case TokenType::unused:
        pieces_[id] = t;
        break;
    }
  }
  if (spm_) {
    // Without a <0xNN> token a byte may still be a one-character token (llama.cpp's
    // fallback too).
    for (int b = 0; b < 256; ++b) {
      if (byte_token_[b] >= 0) continue;
      auto it = text_to_id_.find(std::string_view(std::string(1, static_cast<char>(b))));
      if (it != text_to_id_.end()) byte_token_[b] = it->second;
    }
  }

  merges_.reserve(d.merges.size());
  for (size_t r = 0; r < d.merges.size(); ++r) {
    const std::string& m = d.merges[r];
    const size_t sp = m.find(' ');
    SQZ_CHECK(sp != std::string::npos && sp > 0 && sp + 1 < m.size() && m.find(' ', sp + 1) == std::string::npos,
              "tokenizer: merge ", r, " ('", m, "') is not of the form 'left right'");
    const int32_t left = intern(unmap_text(std::string_view(m).substr(0, sp)));
    const int32_t right = intern(unmap_text(std::string_view(m).substr(sp + 1)));
    const int32_t result = intern(sym_bytes_[left] + sym_bytes_[right]);
    const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
    merges_.try_emplace(key, Merge{static_cast<int32_t>(r), result});  // first (lowest) rank wins
  }
}

void Tokenizer::check_id(int32_t id) const {
  SQZ_CHECK(id >= 0 && id < n_vocab(), "token id ", id, " is outside the vocabulary of ", n_vocab());
}

const std::string& Tokenizer::token_text(int32_t id) const {
  check_id(id);
  return texts_[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  check_id(id);
  return types_[id];
}

std::optional<int32_t> Tokenizer::find_token(std::string_view stored_text) const {
  auto it = text_to_id_.find(std::string(stored_text));
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

void Tokenizer::emit_symbol(int32_t sym, std::vector<int32_t>& out) const {
  if (sym_token_[sym] >= 0) {
    out.push_back(sym_token_[sym]);
    return;
  }
  // A merge result without a token of its own: spell it out byte by byte.
  for (unsigned char b : sym_bytes_[sym]) {
    if (sym_token_[b] >= 0) {
      out.push_back(sym_token_[b]);
    } else {
      SQZ_CHECK(unk_ >= 0, "tokenizer: byte ", int(b), " has no token and there is no unknown token");
      out.push_back(unk_);
    }
  }
}

void Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    auto it = sym_of_bytes_.find(std::string(piece));
    if (it != sym_of_bytes_.end() && sym_token_[it->second] >= 0) {
      out.push_back(sym_token_[it->second]);
      return;
    }
  }
  const size_t n = piece.size();
  if (n == 0) return;
  // Symbols as a doubly linked list over the piece's bytes; a merged symbol lives at its
  // left node and the right node is unlinked.
  std::vector<int32_t> sym(n), prev(n), next(n);
  for (size_t i = 0; i < n; ++i) {
    sym[i] = static_cast<unsigned char>(piece[i]);
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  struct Cand {
    int32_t rank, left, left_sym, right_sym;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const int32_t right = next[left];
    const uint64_t key = (static_cast<uint64_t>(sym[left]) << 32) | static_cast<uint32_t>(sym[right]);
    auto it = merges_.find(key);
    if (it != merges_.end()) queue.push({it->second.rank, left, sym[left], sym[right]});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Cand c = queue.top();
    queue.pop();
    const int32_t right = next[c.left];
    // Stale entries: a neighbour has merged since this pair was queued.
    if (sym[c.left] != c.left_sym || right < 0 || sym[right] != c.right_sym) continue;
    const uint64_t key = (static_cast<uint64_t>(c.left_sym) << 32) | static_cast<uint32_t>(c.right_sym);
    sym[c.left] = merges_.at(key).result;
    sym[right] = -1;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.left;
    consider(prev[c.left]);
    consider(c.left);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) emit_symbol(sym[i], out);
}

void Tokenizer::encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const {
  if (spm_) {
    encode_spm(text, after_special, out);
    return;
  }
  std::string normalized;
  if (!normalizer_.empty()) {
    normalized = normalizer_.apply(text);
    text = normalized;
  }
  std::string repaired;  // invalid UTF-8 is tokenized as llama.cpp reads it (unicode.h)
  if (lenient_utf8(text, repaired)) text = repaired;
  for (const Piece& p : pre_tokenize(text, pre_)) encode_piece(text.substr(p.offset, p.length), out);
}

std::vector<Tokenizer::Fragment> Tokenizer::partition_special(std::string_view text, const EncodeOptions& opt) const {
  const auto is_control = [&](int32_t id) { return types_[id] == TokenType::control || types_[id] == TokenType::unknown; };
  auto wanted = [&](int32_t id) { return opt.parse_special || !is_control(id); };
  // Whether [begin, end) touches a literal range (first range ending after begin).
  const auto in_literal = [&](size_t begin, size_t end) {
    const auto r = std::upper_bound(opt.literal_ranges.begin(), opt.literal_ranges.end(), begin,
                                    [](size_t b, const std::pair<size_t, size_t>& x) { return b < x.second; });
    return r != opt.literal_ranges.end() && r->first < end;
  };
  // Which special tokens occur at all (one trie walk per position).
  std::vector<int32_t> found;
  for (size_t i = 0; i < text.size(); ++i) {
    int32_t node = 0;
    for (size_t k = i; k < text.size(); ++k) {
      auto it = trie_.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[k]));
      if (it == trie_.end()) break;
      node = it->second;
      if (trie_token_[node] >= 0 && wanted(trie_token_[node])) found.push_back(trie_token_[node]);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  // llama.cpp's order: longest text first, each cut out wherever it occurs in the text
  // not yet taken (so "ab" + "bcd" in "abcd" takes "bcd").
  std::stable_sort(found.begin(), found.end(),
                   [&](int32_t a, int32_t b) { return texts_[a].size() > texts_[b].size(); });
  std::vector<Fragment> frags{{0, text.size(), -1}};
  for (int32_t id : found) {
    const std::string& t = texts_[id];
    std::vector<Fragment> next;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.offset, from = f.offset;
      const size_t end = f.offset + f.length;
      const bool literal_here = is_control(id) && !opt.literal_ranges.empty();
      while (from < end) {
        const size_t hit = text.substr(0, end).find(t, from);
        if (hit == std::string_view::npos) break;
        if (literal_here && in_literal(hit, hit + t.size())) {
          from = hit + 1;
          continue;
        }
        if (hit > pos) next.push_back({pos, hit - pos, -1});
        next.push_back({hit, t.size(), id});
        pos = from = hit + t.size();
      }
      if (pos < end) next.push_back({pos, end - pos, -1});
    }
    frags.swap(next);
  }
  return frags;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& opt) const {
  std::vector<int32_t> out;
  if (opt.add_special && add_bos_) out.push_back(bos_);
  bool after_special = true;  // the start of the text counts as following a special token
  for (const Fragment& f : partition_special(text, opt)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_text(text.substr(f.offset, f.length), after_special, out);
      after_special = false;
    }
  }
  if (opt.add_special && add_eos_) out.push_back(eos_);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, const DecodeOptions& opt) const {
  check_id(id);
  if (types_[id] == TokenType::control && !opt.render_control) return {};
  return pieces_[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& opt) const {
  std::string out;
  for (int32_t id : ids) {
    check_id(id);
    if (types_[id] == TokenType::control && !opt.render_control) continue;
    out += pieces_[id];
  }
  // SentencePiece with add_space_prefix added one space in front: take it back.
  if (spm_ && add_space_prefix_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

}  // namespace squeeze::text
