// chat/message_stream.h — what the parsers of message-framed output share (Muse Glimmer's,
// chat/muse_glimmer_output.h, and harmony's, chat/harmony_output.h). After a generation
// prompt ending in `<|start|>assistant`, the model writes messages `HEADER<|message|>BODY`,
// each ended by a marker that says what follows: another message (`<|start|>assistant` and
// its header), nothing (the turn is over), or a role at once (`<|start|>` without an end).
// The header routes the body to the reasoning, the answer or a tool; a tool message's body
// becomes calls when it ends.
//
// A family supplies its header grammar, its end markers, a header that may start in the
// middle of a body, and how a tool body is read. The rest is common, and the same leniencies
// follow from it: text without a header is content; a leading `<|start|>assistant` (the
// prompt's end repeated) is skipped; after a `<|start|>` of another role, or a turn-ending
// marker, the rest is ignored; a body running to the end of the output is closed there; a
// tool body that holds no call goes to its route's fallback channel, as written.
//
// A small state machine over a buffer of undecided text: every decision is taken only once
// the text seen so far fixes it (a match, or a mismatch no continuation can undo), so a split
// never changes the result; at the end, a pattern still incomplete counts as a mismatch.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/output_parser.h"
#include "chat/parsed_output.h"
#include "chat/text_scan.h"

namespace squeeze::chat {

class MessageStreamParser : public OutputParser {
 public:
  // Any split of the text, even inside a UTF-8 sequence or a token's text; ignored after finish().
  ParsedOutput feed(std::string_view chunk) final;
  // The generation ended: decides what was held back, and any unfinished tool message.
  ParsedOutput finish() final;

  // What a family's grammar tells the machinery.
  enum class Channel { reasoning, content, tool };
  struct Route {
    Channel channel = Channel::content;
    std::string tool;                     // the recipient (tool messages)
    Channel fallback = Channel::content;  // where a tool body that holds no call goes
  };
  struct Header {
    scan::Match match = scan::Match::no;
    size_t end = 0;  // just past the header (yes)
    Route route;     // (yes)
  };
  // What follows a body's end marker: another message, nothing, or a role right away.
  enum class Next { message, turn_over, role };
  struct EndMarker {
    std::string_view text;
    Next next;
  };

 protected:
  // `markers`: the tokens that end a body, `<|start|>` (Next::role) among them.
  explicit MessageStreamParser(std::vector<EndMarker> markers) : markers_(std::move(markers)) {}

  // A message's header at s[i]. `at_end`: no text will follow s, so a family may take a
  // header it would otherwise wait on.
  virtual Header header_at(std::string_view s, size_t i, bool at_end) const = 0;
  // Inside a body at s[i]: a new message's header written in place of an end marker (no:
  // s[i] is body text). Yes or no only once no continuation changes it.
  virtual Header switch_at(std::string_view s, size_t i) const = 0;
  // A tool message's whole body: its calls appended to out, or false when it holds none.
  virtual bool read_calls(const Route& route, std::string_view body, ParsedOutput& out) const = 0;

 private:
  enum class State { header, role, after_end, body, done };

  void run(bool at_end, ParsedOutput& out);
  // Each step reads from buf_[pos_]; false: it needs more text to decide.
  bool step_header(bool at_end);
  bool step_role(bool at_end);
  bool step_after_end(bool at_end);
  bool step_body(bool at_end, ParsedOutput& out);
  void open_message(Route route);
  void emit(std::string_view text, ParsedOutput& out);
  void close_message(ParsedOutput& out);

  std::vector<EndMarker> markers_;
  State state_ = State::header;
  Route route_;
  std::string buf_;  // text not yet decided, from pos_
  size_t pos_ = 0;
  std::string tool_body_;  // the tool message being written: read when it ends
  bool finished_ = false;
};

}  // namespace squeeze::chat
