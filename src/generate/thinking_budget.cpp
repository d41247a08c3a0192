// generate/thinking_budget.cpp — the per-turn thinking counter and its forced close.
#include "generate/thinking_budget.h"

#include <cmath>
#include <optional>

#include "core/error.h"

namespace squeeze::generate {

namespace {

constexpr std::array<const char*, 4> kLevels = {"low", "medium", "high", "xhigh"};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Bytes at the end of `s` that start a UTF-8 sequence not yet complete.
size_t incomplete_utf8_tail(const std::string& s) {
  for (size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

// The recipient a header names ("assistant to=self" → "self"), and whether it is complete
// (followed by whitespace).
std::string recipient_of(const std::string& header, bool* complete) {
  const size_t to = header.find("to=");
  *complete = false;
  if (to == std::string::npos) return {};
  size_t end = to + 3;
  while (end < header.size() && !is_space(header[end])) ++end;
  *complete = end < header.size();
  return header.substr(to + 3, end - to - 3);
}

constexpr std::string_view kChannelText = "<|channel|>";
constexpr std::string_view kConstrainText = "<|constrain|>";

// The channel a harmony header names ("<|channel|>analysis" → "analysis"), ended by
// whitespace or markup.
std::string_view channel_of(std::string_view header) {
  const size_t at = header.rfind(kChannelText);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = header.substr(at + kChannelText.size());
  size_t end = 0;
  while (end < rest.size() && !is_space(rest[end]) && rest[end] != '<') ++end;
  return rest.substr(0, end);
}

}  // namespace

std::optional<std::string> reasoning_level(std::string_view requested) {
  if (requested == "none" || requested == "minimal") return std::string("low");
  for (const char* level : kLevels)
    if (requested == level) return std::string(level);
  return std::nullopt;
}

int64_t ReasoningBudgets::for_level(std::string_view level) const {
  const auto known = reasoning_level(level);
  SQZ_CHECK(known, "reasoning effort must be none, minimal, low, medium, high or xhigh (got '", std::string(level), "')");
  for (size_t i = 0; i < kLevels.size(); ++i)
    if (*known == kLevels[i]) return tokens[i];
  return tokens[0];
}

ReasoningBudgets reasoning_budgets_from_metadata(const gguf::Metadata& meta) {
  ReasoningBudgets b;
  for (size_t i = 0; i < kLevels.size(); ++i)
    if (const auto v = meta.get_u32_opt(std::string(kReasoningBudgetKeyPrefix) + kLevels[i])) b.tokens[i] = *v;
  return b;
}

bool ThinkingVocab::has_muse_framing(const text::Tokenizer& tok) {
  for (const char* t : {"<|start|>", "<|message|>", "<|eom|>", "<|eot|>"})
    if (!tok.find_token(t)) return false;
  return true;
}

bool ThinkingVocab::has_harmony_framing(const text::Tokenizer& tok) {
  for (const char* t : {"<|start|>", "<|channel|>", "<|message|>", "<|return|>"})
    if (!tok.find_token(t)) return false;
  return true;
}

namespace {
// <think> / </think> written as text (Qwen3's user-defined tokens), not reserved control ones.
std::optional<int32_t> text_tag(const text::Tokenizer& tok, const char* text) {
  const auto id = tok.find_token(text);
  if (!id || tok.token_type(*id) == text::TokenType::control) return std::nullopt;
  return id;
}
}  // namespace

bool ThinkingVocab::supports(const text::Tokenizer& tok) {
  return has_muse_framing(tok) || has_harmony_framing(tok) || (text_tag(tok, "<think>") && text_tag(tok, "</think>"));
}

namespace {
int32_t framing_token(const text::Tokenizer& tok, const char* text) {
  const auto id = tok.find_token(text);
  SQZ_CHECK(id, "a thinking budget needs Muse Glimmer's <|start|> <|message|> <|eom|> <|eot|> tokens, harmony's "
                "<|start|> <|channel|> <|message|> <|return|>, or <think> and </think>; this vocabulary lacks ",
            text);
  return *id;
}
}  // namespace

ThinkingVocab::ThinkingVocab(const text::Tokenizer& t)
    : tok(t),
      kind(has_muse_framing(t) ? Kind::muse_glimmer : has_harmony_framing(t) ? Kind::harmony : Kind::think_tags),
      pieces(static_cast<size_t>(t.n_vocab())) {
  const auto text = [&](const char* s) { return t.encode(s, {.add_special = false, .parse_special = false}); };
  if (kind == Kind::muse_glimmer) {
    start = framing_token(t, "<|start|>");
    message = framing_token(t, "<|message|>");
    eom = framing_token(t, "<|eom|>");
    eot = framing_token(t, "<|eot|>");
    assistant = text("assistant");
    close = {eom, start};
    close.insert(close.end(), assistant.begin(), assistant.end());
  } else if (kind == Kind::harmony) {
    start = framing_token(t, "<|start|>");
    message = framing_token(t, "<|message|>");
    channel = framing_token(t, "<|channel|>");
    ret = framing_token(t, "<|return|>");
    // The framing's other tokens may be missing from a vocabulary (not from o200k_harmony):
    // -1 then, and a close without <|end|> (a message also ends at <|start|>).
    const auto optional = [&](const char* s) { return t.find_token(s).value_or(-1); };
    end = optional("<|end|>");
    call = optional("<|call|>");
    constrain = optional("<|constrain|>");
    assistant = text("assistant");
    // Straight into the answer, as the model ends its own analysis: the next message's
    // header is written too, so no header is left to the model (it could name analysis).
    const auto final_channel = text("final");
    if (end >= 0) close.push_back(end);
    close.push_back(start);
    close.insert(close.end(), assistant.begin(), assistant.end());
    close.push_back(channel);
    close.insert(close.end(), final_channel.begin(), final_channel.end());
    close.push_back(message);
  } else {
    SQZ_CHECK(text_tag(t, "<think>") && text_tag(t, "</think>"),
              "a thinking budget needs Muse Glimmer's <|start|> <|message|> <|eom|> <|eot|> tokens, harmony's "
              "<|start|> <|channel|> <|message|> <|return|>, or <think> and </think> as text tokens; this vocabulary "
              "has none");
    think = *text_tag(t, "<think>");
    think_end = *text_tag(t, "</think>");
    // As Qwen3 closes its own thinking: a newline, the tag, a blank line.
    const auto newline = t.encode("\n", {.add_special = false, .parse_special = false});
    const auto blank = t.encode("\n\n", {.add_special = false, .parse_special = false});
    close = newline;
    close.push_back(think_end);
    close.insert(close.end(), blank.begin(), blank.end());
  }
  for (int32_t id = 0; id < t.n_vocab(); ++id)
    if (t.token_type(id) != text::TokenType::control) pieces[static_cast<size_t>(id)] = t.token_to_piece(id);
}

ThinkingBudget::ThinkingBudget(std::shared_ptr<const ThinkingVocab> vocab, int64_t budget, int64_t max_takeback)
    : vocab_(std::move(vocab)), budget_(budget), max_takeback_(max_takeback) {
  SQZ_CHECK(budget >= 0, "the thinking budget must be >= 0 (got ", budget, ")");
  spent_ = budget == 0;
}

void ThinkingBudget::start_in_thinking() {
  SQZ_CHECK(vocab_->kind == ThinkingVocab::Kind::think_tags, "only <think> framing starts a turn inside the thinking");
  SQZ_CHECK(state_ == State::header && used_ == 0 && held_.empty(), "start_in_thinking() after the turn began");
  state_ = State::thinking;
}

bool ThinkingBudget::starts_word(int32_t token) const {
  const std::string& p = piece(token);
  return !p.empty() && is_space(p.front());
}

bool ThinkingBudget::thinking_header(const std::string& header) const {
  bool complete = false;
  if (vocab_->kind == ThinkingVocab::Kind::harmony)
    return channel_of(header) == "analysis" && recipient_of(header, &complete).empty();
  return recipient_of(header, &complete) == "self";
}

void ThinkingBudget::mask(std::span<float> logits) const {
  if (!restricts()) return;
  if (vocab_->kind == ThinkingVocab::Kind::think_tags) {
    if (static_cast<size_t>(vocab_->think) < logits.size()) logits[static_cast<size_t>(vocab_->think)] = -INFINITY;
    return;
  }
  // Any token that would make the header name `self` (or the analysis channel): the name
  // completed, or <|message|> (or another control token) after it.
  const bool named = thinking_header(header_);
  const auto& pieces = vocab_->pieces;
  for (size_t id = 0; id < logits.size() && id < pieces.size(); ++id) {
    if (control(static_cast<int32_t>(id))) {
      if (named) logits[id] = -INFINITY;
      continue;
    }
    if (thinking_header(header_ + pieces[id])) logits[id] = -INFINITY;
  }
}

void ThinkingBudget::release_through_boundary(Step& out) {
  out.emit.insert(out.emit.end(), held_.begin(), held_.end());
  held_.clear();
}

bool ThinkingBudget::think(int32_t token, Step& out) {
  const bool new_word = starts_word(token) || (!held_.empty() && is_space(piece(held_.back()).back()));
  if (used_ < budget_) {
    if (new_word) release_through_boundary(out);  // the word before is whole: it may go out
    held_.push_back(token);
    ++used_;
    return false;
  }
  close_thinking(new_word, out);
  return true;
}

void ThinkingBudget::close_thinking(bool new_word, Step& out) {
  out.close = true;
  forced_ = true;
  spent_ = true;
  if (new_word || static_cast<int64_t>(held_.size()) > max_takeback_) {
    // The held tokens end a word (or are too many to take back): keep them, less any
    // bytes of an unfinished UTF-8 character at their end.
    std::string text;
    for (int32_t t : held_) text += piece(t);
    while (!held_.empty() && incomplete_utf8_tail(text) > 0) {
      text.resize(text.size() - piece(held_.back()).size());
      held_.pop_back();
      ++out.take_back;
    }
  } else {
    out.take_back = static_cast<int64_t>(held_.size());
    held_.clear();
  }
  used_ -= out.take_back;
  release_through_boundary(out);
  out.force = vocab_->close;
}

// <think> … </think> at the start of the turn, then the answer.
ThinkingBudget::Step ThinkingBudget::push_tags(int32_t token) {
  Step out;
  const ThinkingVocab& v = *vocab_;
  switch (state_) {
    case State::header:  // before the thinking: it opens now or never
      state_ = token == v.think ? State::thinking : State::body;
      out.emit.push_back(token);
      return out;
    case State::thinking: {
      if (token == v.think_end || control(token)) {  // the model closes its thinking (or ends the turn)
        release_through_boundary(out);
        out.emit.push_back(token);
        spent_ = true;
        state_ = State::body;
        return out;
      }
      if (think(token, out)) state_ = State::body;
      return out;
    }
    case State::body:
    case State::after_eom:
    case State::done:
      out.emit.push_back(token);
      return out;
  }
  return out;
}

bool ThinkingBudget::harmony_framing(int32_t token) const {
  const ThinkingVocab& v = *vocab_;
  return token == v.start || token == v.message || token == v.channel || token == v.end || token == v.ret ||
         token == v.call || token == v.constrain;  // (the absent ones are -1: never a token)
}

// Messages `<|start|>assistant HEADER<|message|>BODY` ended by <|end|> (another follows),
// <|return|> or <|call|> (the turn is over); the header's channel and recipient are text
// after <|channel|> and `to=`. Framing tokens are told by id, not by type: a vocabulary may
// type them otherwise.
ThinkingBudget::Step ThinkingBudget::push_harmony(int32_t token) {
  Step out;
  const ThinkingVocab& v = *vocab_;
  // Where a framing token (outside a header) leads.
  const auto follow = [&](int32_t t) {
    if (t == v.end) {
      state_ = State::after_eom;
    } else if (t == v.ret || t == v.call) {
      state_ = State::done;
    } else if (t == v.start) {
      state_ = State::header, header_.clear();
    } else if (t == v.channel) {  // a header in place of <|end|><|start|>assistant
      state_ = State::header, header_ = kChannelText;
    } else {
      return false;
    }
    return true;
  };
  switch (state_) {
    case State::header:
      if (token == v.message) state_ = thinking_header(header_) ? State::thinking : State::body;
      else if (token == v.end) state_ = State::after_eom;
      else if (token == v.ret || token == v.call) state_ = State::done;
      else if (token == v.start) header_.clear();
      else if (token == v.channel) header_ += kChannelText;
      else if (token == v.constrain) header_ += kConstrainText;
      else header_ += piece(token);
      out.emit.push_back(token);
      return out;
    case State::thinking:
      if (harmony_framing(token) || control(token)) {  // the model ends its analysis itself
        release_through_boundary(out);
        out.emit.push_back(token);
        if (!follow(token)) state_ = State::body;
        return out;
      }
      if (think(token, out)) state_ = State::body;  // the close opened the final answer
      return out;
    case State::body:
      follow(token);
      out.emit.push_back(token);
      return out;
    case State::after_eom:
      if (!follow(token) && !control(token)) state_ = State::body;
      out.emit.push_back(token);
      return out;
    case State::done:
      out.emit.push_back(token);
      return out;
  }
  return out;
}

ThinkingBudget::Step ThinkingBudget::push(int32_t token) {
  if (vocab_->kind == ThinkingVocab::Kind::think_tags) return push_tags(token);
  if (vocab_->kind == ThinkingVocab::Kind::harmony) return push_harmony(token);
  Step out;
  const ThinkingVocab& v = *vocab_;
  const bool is_control = control(token);
  switch (state_) {
    case State::header:
      if (token == v.message) state_ = thinking_header(header_) ? State::thinking : State::body;
      else if (token == v.eot) state_ = State::done;
      else if (token == v.start) header_.clear();
      else header_ += piece(token);
      out.emit.push_back(token);
      return out;
    case State::thinking: {
      if (is_control) {  // the model ends its thinking itself (<|eom|>, <|eot|>, <|start|>)
        release_through_boundary(out);
        out.emit.push_back(token);
        state_ = token == v.eom ? State::after_eom : token == v.eot ? State::done : State::header;
        header_.clear();
        return out;
      }
      if (think(token, out)) {
        state_ = State::header;
        header_ = "assistant";
      }
      return out;
    }
    case State::body:
      if (token == v.eom) state_ = State::after_eom;
      else if (token == v.eot) state_ = State::done;
      else if (token == v.start) state_ = State::header, header_.clear();
      out.emit.push_back(token);
      return out;
    case State::after_eom:
      if (token == v.start) state_ = State::header, header_.clear();
      else if (token == v.eot) state_ = State::done;
      else if (!is_control) state_ = State::body;
      out.emit.push_back(token);
      return out;
    case State::done:
      out.emit.push_back(token);
      return out;
  }
  return out;
}

std::vector<int32_t> ThinkingBudget::finish() {
  std::vector<int32_t> out;
  out.swap(held_);
  return out;
}

}  // namespace squeeze::generate
