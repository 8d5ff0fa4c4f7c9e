#include "rules/template.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "rules/template_functions.h"

namespace gpuscope::rules {
namespace template_internal {

// ---------------------------------------------------------------------------------------------------------------
// The parse tree, shaped like Go's text/template/parse nodes so execution and error contexts match.

struct Number {
  bool is_int = false, is_uint = false, is_float = false;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
};

struct Pipe;

struct Arg {
  enum class Kind { kField, kVariable, kDot, kNil, kBool, kNumber, kString, kIdentifier, kPipe, kChain };
  Kind kind = Kind::kDot;
  std::size_t pos = 0;
  // kField: the field names; kVariable: "$x" then field names; kChain: the field names after `node`.
  std::vector<std::string> idents;
  bool boolean = false;
  Number number;
  std::string text;    // kNumber: as written; kString: the value; kIdentifier: the name
  std::string quoted;  // kString: the literal as written
  std::shared_ptr<const Pipe> pipe;  // kPipe
  std::shared_ptr<const Arg> node;   // kChain: the term the fields are read from
  const Function* function = nullptr;  // kIdentifier
};

struct Command {
  std::size_t pos = 0;
  std::vector<Arg> args;
};

struct Pipe {
  std::size_t pos = 0;
  bool is_assign = false;  // $x = ... rather than $x := ...
  std::vector<std::string> decls;
  std::vector<Command> cmds;
};

struct Node;
using List = std::vector<Node>;

struct Node {
  enum class Kind { kText, kAction, kIf, kWith, kRange, kTemplate, kBreak, kContinue };
  Kind kind = Kind::kText;
  std::size_t pos = 0;
  std::string text;  // kText: the text; kTemplate: the invoked template's name
  std::shared_ptr<const Pipe> pipe;
  std::shared_ptr<const List> list, else_list;
};

struct Tree {
  std::string name;
  std::string text;
  List root;
  std::map<std::string, std::shared_ptr<const List>, std::less<>> defined;  // {{define "x"}}
};

namespace {

// Go's node.String(): how error messages quote the failing part of a template.
std::string to_string(const Pipe& p);
std::string to_string(const List& l);

std::string to_string(const Arg& a) {
  std::string out;
  switch (a.kind) {
    case Arg::Kind::kField:
      for (const auto& f : a.idents) out += "." + f;
      return out;
    case Arg::Kind::kVariable:
      for (std::size_t i = 0; i < a.idents.size(); ++i) out += (i > 0 ? "." : "") + a.idents[i];
      return out;
    case Arg::Kind::kDot: return ".";
    case Arg::Kind::kNil: return "nil";
    case Arg::Kind::kBool: return a.boolean ? "true" : "false";
    case Arg::Kind::kNumber: return a.text;
    case Arg::Kind::kString: return a.quoted;
    case Arg::Kind::kIdentifier: return a.text;
    case Arg::Kind::kPipe: return to_string(*a.pipe);
    case Arg::Kind::kChain:
      out = a.node->kind == Arg::Kind::kPipe ? "(" + to_string(*a.node) + ")" : to_string(*a.node);
      for (const auto& f : a.idents) out += "." + f;
      return out;
  }
  return out;
}

std::string to_string(const Command& c) {
  std::string out;
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    if (i > 0) out += ' ';
    out += c.args[i].kind == Arg::Kind::kPipe ? "(" + to_string(c.args[i]) + ")" : to_string(c.args[i]);
  }
  return out;
}

std::string to_string(const Pipe& p) {
  std::string out;
  for (std::size_t i = 0; i < p.decls.size(); ++i) out += (i > 0 ? ", " : "") + p.decls[i];
  if (!p.decls.empty()) out += p.is_assign ? " = " : " := ";
  for (std::size_t i = 0; i < p.cmds.size(); ++i) out += (i > 0 ? " | " : "") + to_string(p.cmds[i]);
  return out;
}

std::string to_string(const Node& n) {
  auto branch = [&](std::string_view name) {
    std::string out = fmt::format("{{{{{} {}}}}}{}", name, to_string(*n.pipe), to_string(*n.list));
    if (n.else_list) out += "{{else}}" + to_string(*n.else_list);
    return out + "{{end}}";
  };
  switch (n.kind) {
    case Node::Kind::kText: return n.text;
    case Node::Kind::kAction: return "{{" + to_string(*n.pipe) + "}}";
    case Node::Kind::kIf: return branch("if");
    case Node::Kind::kWith: return branch("with");
    case Node::Kind::kRange: return branch("range");
    case Node::Kind::kTemplate:
      return n.pipe ? fmt::format("{{{{template {} {}}}}}", go_quote(n.text), to_string(*n.pipe))
                    : fmt::format("{{{{template {}}}}}", go_quote(n.text));
    case Node::Kind::kBreak: return "{{break}}";
    case Node::Kind::kContinue: return "{{continue}}";
  }
  return "";
}

std::string to_string(const List& l) {
  std::string out;
  for (const auto& n : l) out += to_string(n);
  return out;
}

struct LineColumn {
  std::size_t line, column;
};

// Go's ErrorContext: lines from 1, columns as byte offsets from 0.
LineColumn line_column(std::string_view text, std::size_t pos) {
  pos = std::min(pos, text.size());
  const std::string_view before = text.substr(0, pos);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t nl = before.rfind('\n');
  return {line, nl == std::string_view::npos ? pos : pos - nl - 1};
}

// ---------------------------------------------------------------------------------------------------------------
// Lexer (text/template/parse/lex.go): the whole text to tokens up front; a lexical error is the last token,
// so the parser reports it exactly when Go's would reach it.

enum class Tok {
  kError, kBool, kChar, kCharConstant, kComplex, kAssign, kDeclare, kEof, kField, kIdentifier, kLeftDelim,
  kLeftParen, kNumber, kPipe, kRawString, kRightDelim, kRightParen, kSpace, kString, kText, kVariable,
  // Keywords.
  kBlock, kBreak, kContinue, kDot, kDefine, kElse, kEnd, kIf, kNil, kRange, kTemplate, kWith,
};

bool is_keyword(Tok t) { return t >= Tok::kBlock; }

struct Token {
  Tok type;
  std::size_t pos;
  std::string val;
};

// Go's item.String(), as "unexpected %s" prints a token.
std::string describe(const Token& t) {
  if (t.type == Tok::kEof) return "EOF";
  if (t.type == Tok::kError) return t.val;
  if (is_keyword(t.type)) return "<" + t.val + ">";
  if (t.val.size() > 10) return go_quote(t.val.substr(0, 10)) + "...";
  return go_quote(t.val);
}

constexpr std::string_view kLeftDelim = "{{";
constexpr std::string_view kRightDelim = "}}";

bool is_space(char32_t r) { return r == ' ' || r == '\t' || r == '\r' || r == '\n'; }
bool has_left_trim_marker(std::string_view s) { return s.size() >= 2 && s[0] == '-' && is_space(static_cast<unsigned char>(s[1])); }
bool has_right_trim_marker(std::string_view s) { return s.size() >= 2 && is_space(static_cast<unsigned char>(s[0])) && s[1] == '-'; }

std::size_t leading_space(std::string_view s) {
  const std::size_t n = s.find_first_not_of(" \t\r\n");
  return n == std::string_view::npos ? s.size() : n;
}
std::size_t trailing_space(std::string_view s) {
  const std::size_t n = s.find_last_not_of(" \t\r\n");
  return n == std::string_view::npos ? s.size() : s.size() - n - 1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view in) : in_(in) {}

  std::vector<Token> run() {
    Next state = Next::kText;
    while (items_.empty() || (items_.back().type != Tok::kError && items_.back().type != Tok::kEof)) {
      state = state == Next::kText ? lex_text() : lex_inside_action();
    }
    return std::move(items_);
  }

 private:
  // Which state function runs next (Go's stateFn); lexing stops at the EOF or error token.
  enum class Next { kText, kInside };

  std::string_view in_;
  std::size_t pos_ = 0, start_ = 0;
  int paren_depth_ = 0;
  std::vector<Token> items_;

  static constexpr char32_t kEofRune = 0xFFFFFFFF;

  char32_t next() {
    if (pos_ >= in_.size()) {
      last_width_ = 0;
      return kEofRune;
    }
    const auto [r, w] = go_decode_rune(in_, pos_);
    last_width_ = static_cast<std::size_t>(w);
    pos_ += last_width_;
    return r;
  }
  void backup() { pos_ -= last_width_; }
  char32_t peek() {
    const char32_t r = next();
    backup();
    return r;
  }
  std::size_t last_width_ = 0;

  void emit(Tok t) {
    items_.push_back({t, start_, std::string(in_.substr(start_, pos_ - start_))});
    start_ = pos_;
  }
  void ignore() { start_ = pos_; }
  // Ends lexing: the error is the last token.
  Next error(std::string msg) {
    items_.push_back({Tok::kError, start_, std::move(msg)});
    return Next::kText;
  }
  bool accept(std::string_view valid) {
    const char32_t r = next();
    if (r < 0x80 && valid.find(static_cast<char>(r)) != std::string_view::npos) return true;
    backup();
    return false;
  }
  void accept_run(std::string_view valid) {
    while (accept(valid)) {
    }
  }

  std::pair<bool, bool> at_right_delim() const {
    const std::string_view rest = in_.substr(pos_);
    if (rest.starts_with(kRightDelim)) return {true, false};
    if (has_right_trim_marker(rest) && rest.substr(2).starts_with(kRightDelim)) return {true, true};
    return {false, false};
  }

  bool at_terminator() {
    const char32_t r = peek();
    if (is_space(r)) return true;
    switch (r) {
      case kEofRune:
      case '.':
      case ',':
      case '|':
      case ':':
      case ')':
      case '(':
      case '}':  // the first character of the right delimiter
        return true;
      default:
        return false;
    }
  }

  Next lex_text() {
    const std::size_t x = in_.find(kLeftDelim, pos_);
    if (x == std::string_view::npos) {
      pos_ = in_.size();
      if (pos_ > start_) emit(Tok::kText);
      emit(Tok::kEof);
      return Next::kText;
    }
    std::size_t trim = 0;
    if (has_left_trim_marker(in_.substr(x + kLeftDelim.size()))) trim = trailing_space(in_.substr(start_, x - start_));
    pos_ = x - trim;
    if (pos_ > start_) emit(Tok::kText);
    pos_ = x;
    ignore();
    return lex_left_delim();
  }

  Next lex_left_delim() {
    pos_ += kLeftDelim.size();
    const bool trim = has_left_trim_marker(in_.substr(pos_));
    const std::size_t after = trim ? 2 : 0;
    if (in_.substr(pos_ + after).starts_with("/*")) {
      pos_ += after;
      ignore();
      return lex_comment();
    }
    emit(Tok::kLeftDelim);
    pos_ += after;
    ignore();
    paren_depth_ = 0;
    return Next::kInside;
  }

  // A comment is a whole action; lexing continues in text.
  Next lex_comment() {
    pos_ += 2;
    const std::size_t i = in_.find("*/", pos_);
    if (i == std::string_view::npos) return error("unclosed comment");
    pos_ = i + 2;
    const auto [delim, trim] = at_right_delim();
    if (!delim) return error("comment ends before closing delimiter");
    if (trim) pos_ += 2;
    pos_ += kRightDelim.size();
    if (trim) pos_ += leading_space(in_.substr(pos_));
    ignore();
    return Next::kText;
  }

  Next lex_right_delim() {
    const bool trim = has_right_trim_marker(in_.substr(pos_));
    if (trim) {
      pos_ += 2;
      ignore();
    }
    pos_ += kRightDelim.size();
    emit(Tok::kRightDelim);
    if (trim) {
      pos_ += leading_space(in_.substr(pos_));
      ignore();
    }
    return Next::kText;
  }

  // One token inside an action.
  Next lex_inside_action() {
    if (at_right_delim().first) {
      if (paren_depth_ == 0) return lex_right_delim();
      return error("unclosed left paren");
    }
    const char32_t r = next();
    if (r == kEofRune) return error("unclosed action");
    if (is_space(r)) {
      backup();
      return lex_space();
    }
    switch (r) {
      case '=': emit(Tok::kAssign); return Next::kInside;
      case ':':
        if (next() != '=') return error("expected :=");
        emit(Tok::kDeclare);
        return Next::kInside;
      case '|': emit(Tok::kPipe); return Next::kInside;
      case '"': return lex_quote();
      case '`': return lex_raw_quote();
      case '$': return lex_variable();
      case '\'': return lex_char();
      case '(':
        emit(Tok::kLeftParen);
        ++paren_depth_;
        return Next::kInside;
      case ')':
        if (--paren_depth_ < 0) return error("unexpected right paren");
        emit(Tok::kRightParen);
        return Next::kInside;
      default: break;
    }
    if (r == '.' && pos_ < in_.size() && (in_[pos_] < '0' || in_[pos_] > '9')) return lex_field_or_variable(Tok::kField);
    if (r == '.' || r == '+' || r == '-' || (r >= '0' && r <= '9')) {
      backup();
      return lex_number();
    }
    if (go_is_alphanumeric(r)) {
      backup();
      return lex_identifier();
    }
    if (r < 0x7F && r >= 0x20) {
      emit(Tok::kChar);
      return Next::kInside;
    }
    return error("unrecognized character in action: " + go_unicode(r));
  }

  Next lex_space() {
    int spaces = 0;
    while (is_space(peek())) {
      next();
      ++spaces;
    }
    // A space followed by "-}}" is a trim marker, not a separator.
    const std::string_view rest = in_.substr(pos_ - 1);
    if (has_right_trim_marker(rest) && rest.substr(2).starts_with(kRightDelim)) {
      --pos_;
      if (spaces == 1) return lex_right_delim();
    }
    emit(Tok::kSpace);
    return Next::kInside;
  }

  Next lex_identifier() {
    char32_t r = 0;
    while (true) {
      r = next();
      if (r == kEofRune || !go_is_alphanumeric(r)) break;
    }
    if (r != kEofRune) backup();
    if (!at_terminator()) return error("bad character " + go_unicode(peek()));
    static const std::map<std::string, Tok, std::less<>> kKeywords = {
        {"block", Tok::kBlock}, {"break", Tok::kBreak}, {"continue", Tok::kContinue}, {"define", Tok::kDefine},
        {"else", Tok::kElse},   {"end", Tok::kEnd},     {"if", Tok::kIf},             {"nil", Tok::kNil},
        {"range", Tok::kRange}, {"template", Tok::kTemplate}, {"with", Tok::kWith}};
    const std::string_view word = in_.substr(start_, pos_ - start_);
    if (auto it = kKeywords.find(word); it != kKeywords.end()) {
      emit(it->second);
    } else if (word == "true" || word == "false") {
      emit(Tok::kBool);
    } else {
      emit(Tok::kIdentifier);
    }
    return Next::kInside;
  }

  Next lex_variable() {
    if (at_terminator()) {
      emit(Tok::kVariable);
      return Next::kInside;
    }
    return lex_field_or_variable(Tok::kVariable);
  }

  Next lex_field_or_variable(Tok type) {
    if (at_terminator()) {
      emit(type == Tok::kVariable ? Tok::kVariable : Tok::kDot);
      return Next::kInside;
    }
    char32_t r = 0;
    while (true) {
      r = next();
      if (r == kEofRune || !go_is_alphanumeric(r)) break;
    }
    if (r != kEofRune) backup();
    if (!at_terminator()) return error("bad character " + go_unicode(peek()));
    emit(type);
    return Next::kInside;
  }

  Next lex_char() { return lex_escaped('\'', Tok::kCharConstant, "unterminated character constant"); }

  bool scan_number() {
    accept("+-");
    std::string_view digits = "0123456789_";
    if (accept("0")) {
      if (accept("xX")) {
        digits = "0123456789abcdefABCDEF_";
      } else if (accept("oO")) {
        digits = "01234567_";
      } else if (accept("bB")) {
        digits = "01_";
      }
    }
    accept_run(digits);
    if (accept(".")) accept_run(digits);
    if (digits.size() == 11 && accept("eE")) {
      accept("+-");
      accept_run("0123456789_");
    }
    if (digits.size() == 23 && accept("pP")) {
      accept("+-");
      accept_run("0123456789_");
    }
    accept("i");
    const char32_t r = peek();
    if (r != kEofRune && go_is_alphanumeric(r)) {
      next();
      return false;
    }
    return true;
  }

  Next lex_number() {
    if (!scan_number()) return error("bad number syntax: " + go_quote(in_.substr(start_, pos_ - start_)));
    const char32_t sign = peek();
    if (sign == '+' || sign == '-') {
      if (!scan_number() || in_[pos_ - 1] != 'i') {
        return error("bad number syntax: " + go_quote(in_.substr(start_, pos_ - start_)));
      }
      emit(Tok::kComplex);
    } else {
      emit(Tok::kNumber);
    }
    return Next::kInside;
  }

  Next lex_quote() { return lex_escaped('"', Tok::kString, "unterminated quoted string"); }

  // A '...' or "..." literal: a backslash escapes the next character; a newline or the end inside it
  // is the error Go's lexer gives.
  Next lex_escaped(char32_t close, Tok type, const char* unterminated) {
    while (true) {
      const char32_t r = next();
      if (r == '\\') {
        const char32_t e = next();
        if (e != kEofRune && e != '\n') continue;
        return error(unterminated);
      }
      if (r == kEofRune || r == '\n') return error(unterminated);
      if (r == close) break;
    }
    emit(type);
    return Next::kInside;
  }

  Next lex_raw_quote() {
    while (true) {
      const char32_t r = next();
      if (r == kEofRune) return error("unterminated raw quoted string");
      if (r == '`') break;
    }
    emit(Tok::kRawString);
    return Next::kInside;
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Parser (text/template/parse/parse.go). Errors are thrown inside this file only.

struct ParseFailure {
  std::size_t pos;
  std::string message;
};

bool is_empty_list(const List& l) {
  return std::all_of(l.begin(), l.end(), [](const Node& n) {
    return n.kind == Node::Kind::kText && leading_space(n.text) == n.text.size();
  });
}

class Parser {
 public:
  Parser(Tree& tree, std::vector<std::string> predeclared) : tree_(tree), vars_(std::move(predeclared)) {
    toks_ = Lexer(tree.text).run();
  }

  void parse() {
    while (peek().type != Tok::kEof) {
      if (peek().type == Tok::kLeftDelim) {
        const std::size_t mark = i_;
        next();
        if (next_non_space().type == Tok::kDefine) {
          parse_definition();
          continue;
        }
        i_ = mark;
      }
      Item item = text_or_action();
      if (item.which != Item::kNode) errorf(fmt::format("unexpected {}", item.which == Item::kEnd ? "{{end}}" : "{{else}}"));
      tree_.root.push_back(std::move(item.node));
    }
  }

 private:
  // What textOrAction returns: a node, or the {{end}} / {{else}} that closes the current list.
  struct Item {
    enum Which { kNode, kEnd, kElse } which = kNode;
    Node node;
  };

  Tree& tree_;
  std::vector<std::string> vars_;
  std::vector<Token> toks_;
  std::size_t i_ = 0;
  std::size_t err_pos_ = 0;
  int range_depth_ = 0;
  int nesting_ = 0;
  static constexpr int kMaxNesting = 1000;

  // Parsing and execution recurse per nesting level (parentheses, if/range/with); a pathological template
  // must fail to parse, not overflow the stack.
  struct Nesting {
    int& depth;
    ~Nesting() { --depth; }
  };
  Nesting enter() {
    if (++nesting_ > kMaxNesting) {
      --nesting_;
      errorf(fmt::format("nesting depth exceeds {}", kMaxNesting));
    }
    return Nesting{nesting_};
  }

  const Token& next() {
    const Token& t = toks_[std::min(i_, toks_.size() - 1)];
    ++i_;
    err_pos_ = t.pos;
    return t;
  }
  void backup() { --i_; }
  // Looking ahead does not move the position errors are reported at.
  const Token& peek() {
    const std::size_t saved = err_pos_;
    const Token& t = next();
    backup();
    err_pos_ = saved;
    return t;
  }
  const Token& next_non_space() {
    while (true) {
      const Token& t = next();
      if (t.type != Tok::kSpace) return t;
    }
  }
  const Token& peek_non_space() {
    while (peek().type == Tok::kSpace) next();
    return peek();
  }

  // Errors point at the last token read (Go reports only its line).
  [[noreturn]] void errorf(std::string message) { throw ParseFailure{err_pos_, std::move(message)}; }
  [[noreturn]] void errorf_at(std::size_t pos, std::string message) { throw ParseFailure{pos, std::move(message)}; }
  [[noreturn]] void unexpected(const Token& t, std::string_view context) {
    if (t.type == Tok::kError) errorf(t.val);
    errorf(fmt::format("unexpected {} in {}", describe(t), context));
  }
  const Token& expect(Tok type, std::string_view context) {
    const Token& t = next_non_space();
    if (t.type != type) unexpected(t, context);
    return t;
  }

  void add_definition(const std::string& name, List list) {
    auto it = tree_.defined.find(name);
    if (it != tree_.defined.end() && !is_empty_list(*it->second)) {
      if (!is_empty_list(list)) errorf(fmt::format("template: multiple definition of template {}", go_quote(name)));
      return;
    }
    tree_.defined[name] = std::make_shared<const List>(std::move(list));
  }

  // A definition has its own variable scope with only "$", as in Go.
  template <class F>
  auto with_fresh_scope(F f) {
    auto saved_vars = std::exchange(vars_, std::vector<std::string>{"$"});
    const int saved_depth = std::exchange(range_depth_, 0);
    auto result = f();
    vars_ = std::move(saved_vars);
    range_depth_ = saved_depth;
    return result;
  }

  void parse_definition() {
    constexpr std::string_view kContext = "define clause";
    const Token& name_tok = next_non_space();
    if (name_tok.type != Tok::kString && name_tok.type != Tok::kRawString) unexpected(name_tok, kContext);
    auto name = go_unquote(name_tok.val);
    if (!name) errorf(name.error());
    expect(Tok::kRightDelim, kContext);
    List list = with_fresh_scope([&] {
      auto [body, end] = item_list();
      if (end.which != Item::kEnd) errorf(fmt::format("unexpected {} in {}", "{{else}}", kContext));
      return std::move(body);
    });
    add_definition(*name, std::move(list));
  }

  std::pair<List, Item> item_list() {
    List list;
    while (peek_non_space().type != Tok::kEof) {
      Item item = text_or_action();
      if (item.which != Item::kNode) return {std::move(list), std::move(item)};
      list.push_back(std::move(item.node));
    }
    errorf_at(peek().pos, "unexpected EOF");
  }

  Item text_or_action() {
    const Token& t = next_non_space();
    if (t.type == Tok::kText) return Item{Item::kNode, Node{Node::Kind::kText, t.pos, t.val, nullptr, nullptr, nullptr}};
    if (t.type == Tok::kLeftDelim) return action();
    unexpected(t, "input");
  }

  Item action() {
    const Token& t = next_non_space();
    switch (t.type) {
      case Tok::kBlock: return Item{Item::kNode, block_control()};
      case Tok::kBreak: return Item{Item::kNode, loop_control(t.pos, Node::Kind::kBreak, "break")};
      case Tok::kContinue: return Item{Item::kNode, loop_control(t.pos, Node::Kind::kContinue, "continue")};
      case Tok::kElse: {
        const Token& p = peek_non_space();
        if (p.type == Tok::kIf || p.type == Tok::kWith) return Item{Item::kElse, Node{}};
        expect(Tok::kRightDelim, "else");
        return Item{Item::kElse, Node{}};
      }
      case Tok::kEnd:
        expect(Tok::kRightDelim, "end");
        return Item{Item::kEnd, Node{}};
      case Tok::kIf: return Item{Item::kNode, control(Node::Kind::kIf, "if")};
      case Tok::kRange: return Item{Item::kNode, control(Node::Kind::kRange, "range")};
      case Tok::kTemplate: return Item{Item::kNode, template_control()};
      case Tok::kWith: return Item{Item::kNode, control(Node::Kind::kWith, "with")};
      default: break;
    }
    backup();
    const std::size_t pos = peek().pos;
    // Variables declared here stay until the end of the enclosing control structure.
    return Item{Item::kNode, Node{Node::Kind::kAction, pos, "", pipeline("command", Tok::kRightDelim), nullptr, nullptr}};
  }

  Node loop_control(std::size_t pos, Node::Kind kind, std::string_view word) {
    const Token& t = next_non_space();
    if (t.type != Tok::kRightDelim) unexpected(t, fmt::format("{{{{{}}}}}", word));
    if (range_depth_ == 0) errorf(fmt::format("{{{{{}}}}} outside {{{{range}}}}", word));
    return Node{kind, pos, "", nullptr, nullptr, nullptr};
  }

  // {{if}}, {{with}} and {{range}}: pipeline, list, optional {{else}} list (or an "else if"/"else with"
  // chain, read as a nested if/with that shares the single {{end}}).
  Node control(Node::Kind kind, std::string_view context) {
    const Nesting nested = enter();
    const std::size_t vars_mark = vars_.size();
    auto pipe = pipeline(context, Tok::kRightDelim);
    if (kind == Node::Kind::kRange) ++range_depth_;
    auto [list, next_item] = item_list();
    if (kind == Node::Kind::kRange) --range_depth_;
    std::shared_ptr<const List> else_list;
    if (next_item.which == Item::kElse) {
      if (kind == Node::Kind::kIf && peek().type == Tok::kIf) {
        next();
        else_list = std::make_shared<const List>(List{control(Node::Kind::kIf, "if")});
      } else if (kind == Node::Kind::kWith && peek().type == Tok::kWith) {
        next();
        else_list = std::make_shared<const List>(List{control(Node::Kind::kWith, "with")});
      } else {
        auto [elses, end] = item_list();
        if (end.which != Item::kEnd) errorf("expected end; found {{else}}");
        else_list = std::make_shared<const List>(std::move(elses));
      }
    }
    vars_.resize(vars_mark);
    const std::size_t pos = pipe->pos;
    return Node{kind, pos, "", std::move(pipe), std::make_shared<const List>(std::move(list)), std::move(else_list)};
  }

  std::string template_name(const Token& t, std::string_view context) {
    if (t.type != Tok::kString && t.type != Tok::kRawString) unexpected(t, context);
    auto name = go_unquote(t.val);
    if (!name) errorf(name.error());
    return *name;
  }

  Node template_control() {
    constexpr std::string_view kContext = "template clause";
    const Token& t = next_non_space();
    const std::size_t pos = t.pos;
    std::string name = template_name(t, kContext);
    std::shared_ptr<const Pipe> pipe;
    if (next_non_space().type != Tok::kRightDelim) {
      backup();
      pipe = pipeline(kContext, Tok::kRightDelim);
    }
    return Node{Node::Kind::kTemplate, pos, std::move(name), std::move(pipe), nullptr, nullptr};
  }

  // {{block "x" pipeline}} body {{end}}: defines "x" and invokes it.
  Node block_control() {
    constexpr std::string_view kContext = "block clause";
    const Token& t = next_non_space();
    const std::size_t pos = t.pos;
    std::string name = template_name(t, kContext);
    auto pipe = pipeline(kContext, Tok::kRightDelim);
    List body = with_fresh_scope([&] {
      auto [list, end] = item_list();
      if (end.which != Item::kEnd) errorf(fmt::format("unexpected {} in {}", "{{else}}", kContext));
      return std::move(list);
    });
    add_definition(name, std::move(body));
    return Node{Node::Kind::kTemplate, pos, std::move(name), std::move(pipe), nullptr, nullptr};
  }

  std::shared_ptr<const Pipe> pipeline(std::string_view context, Tok end) {
    const Nesting nested = enter();
    auto pipe = std::make_shared<Pipe>();
    pipe->pos = peek_non_space().pos;
    // Declarations: "$x :=", "$x =", and for range "$i, $e :=".
    while (true) {
      if (peek_non_space().type != Tok::kVariable) break;
      const std::size_t var_index = i_;
      const Token& v = next();
      const Token& after = peek_non_space();
      if (after.type == Tok::kAssign || after.type == Tok::kDeclare) {
        pipe->is_assign = after.type == Tok::kAssign;
        next_non_space();
        pipe->decls.push_back(v.val);
        vars_.push_back(v.val);
        break;
      }
      if (after.type == Tok::kChar && after.val == ",") {
        next_non_space();
        pipe->decls.push_back(v.val);
        vars_.push_back(v.val);
        if (context == "range" && pipe->decls.size() < 2) {
          const Tok t = peek_non_space().type;
          if (t == Tok::kVariable || t == Tok::kRightDelim || t == Tok::kRightParen) continue;
          errorf("range can only initialize variables");
        }
        errorf(fmt::format("too many declarations in {}", context));
      }
      i_ = var_index;  // not a declaration: the variable is the pipeline's first operand
      break;
    }
    while (true) {
      const Token& t = next_non_space();
      if (t.type == end) {
        check_pipeline(*pipe, context);
        return pipe;
      }
      switch (t.type) {
        case Tok::kBool:
        case Tok::kCharConstant:
        case Tok::kComplex:
        case Tok::kDot:
        case Tok::kField:
        case Tok::kIdentifier:
        case Tok::kNumber:
        case Tok::kNil:
        case Tok::kRawString:
        case Tok::kString:
        case Tok::kVariable:
        case Tok::kLeftParen:
          backup();
          pipe->cmds.push_back(command());
          break;
        default: unexpected(t, context);
      }
    }
  }

  void check_pipeline(const Pipe& pipe, std::string_view context) {
    if (pipe.cmds.empty()) errorf(fmt::format("missing value for {}", context));
    for (std::size_t i = 1; i < pipe.cmds.size(); ++i) {
      switch (pipe.cmds[i].args[0].kind) {
        case Arg::Kind::kBool:
        case Arg::Kind::kDot:
        case Arg::Kind::kNil:
        case Arg::Kind::kNumber:
        case Arg::Kind::kString:
          errorf_at(pipe.cmds[i].pos, fmt::format("non executable command in pipeline stage {}", i + 1));
        default: break;
      }
    }
  }

  Command command() {
    Command cmd;
    cmd.pos = peek_non_space().pos;
    while (true) {
      peek_non_space();
      if (auto operand = this->operand()) cmd.args.push_back(std::move(*operand));
      const Token& t = next();
      if (t.type == Tok::kSpace) continue;
      if (t.type == Tok::kRightDelim || t.type == Tok::kRightParen) {
        backup();
      } else if (t.type != Tok::kPipe) {
        unexpected(t, "operand");
      }
      break;
    }
    if (cmd.args.empty()) errorf("empty command");
    return cmd;
  }

  std::optional<Arg> operand() {
    auto node = term();
    if (!node) return std::nullopt;
    if (peek().type != Tok::kField) return node;
    Arg chain;
    chain.kind = Arg::Kind::kChain;
    chain.pos = peek().pos;
    while (peek().type == Tok::kField) chain.idents.push_back(next().val.substr(1));
    switch (node->kind) {
      case Arg::Kind::kField:
      case Arg::Kind::kVariable:
        node->idents.insert(node->idents.end(), chain.idents.begin(), chain.idents.end());
        node->pos = chain.pos;
        return node;
      case Arg::Kind::kBool:
      case Arg::Kind::kString:
      case Arg::Kind::kNumber:
      case Arg::Kind::kNil:
      case Arg::Kind::kDot:
        errorf(fmt::format("unexpected . after term {}", go_quote(to_string(*node))));
      default:
        chain.node = std::make_shared<const Arg>(std::move(*node));
        return chain;
    }
  }

  std::optional<Arg> term() {
    const Token& t = next_non_space();
    Arg a;
    a.pos = t.pos;
    switch (t.type) {
      case Tok::kError: errorf(t.val);
      case Tok::kIdentifier:
        a.function = find_function(t.val);
        if (a.function == nullptr) errorf(fmt::format("function {} not defined", go_quote(t.val)));
        a.kind = Arg::Kind::kIdentifier;
        a.text = t.val;
        return a;
      case Tok::kDot: a.kind = Arg::Kind::kDot; return a;
      case Tok::kNil: a.kind = Arg::Kind::kNil; return a;
      case Tok::kVariable:
        if (std::find(vars_.begin(), vars_.end(), t.val) == vars_.end()) {
          errorf(fmt::format("undefined variable {}", go_quote(t.val)));
        }
        a.kind = Arg::Kind::kVariable;
        a.idents = {t.val};
        return a;
      case Tok::kField:
        a.kind = Arg::Kind::kField;
        a.idents = {t.val.substr(1)};
        return a;
      case Tok::kBool:
        a.kind = Arg::Kind::kBool;
        a.boolean = t.val == "true";
        return a;
      case Tok::kCharConstant:
      case Tok::kComplex:
      case Tok::kNumber:
        a.kind = Arg::Kind::kNumber;
        a.text = t.val;
        a.number = number(t);
        return a;
      case Tok::kLeftParen:
        a.kind = Arg::Kind::kPipe;
        a.pipe = pipeline("parenthesized pipeline", Tok::kRightParen);
        return a;
      case Tok::kString:
      case Tok::kRawString: {
        auto s = go_unquote(t.val);
        if (!s) errorf(s.error());
        a.kind = Arg::Kind::kString;
        a.text = std::move(*s);
        a.quoted = t.val;
        return a;
      }
      default: backup(); return std::nullopt;
    }
  }

  // parse.NumberNode: which of int, uint and float the literal can be (idealConstant picks at run time).
  Number number(const Token& t) {
    Number n;
    if (t.type == Tok::kCharConstant) {
      auto r = go_unquote_char(t.val);
      if (!r) errorf(r.error());
      n.is_int = n.is_uint = n.is_float = true;
      n.i = static_cast<std::int64_t>(*r);
      n.u = static_cast<std::uint64_t>(*r);
      n.f = static_cast<double>(*r);
      return n;
    }
    if (t.type == Tok::kComplex || (!t.val.empty() && t.val.back() == 'i')) {
      errorf(fmt::format("complex constant {} is not supported", t.val));
    }
    if (auto u = go_parse_uint(t.val)) {
      n.is_uint = true;
      n.u = *u;
    }
    if (auto i = go_parse_int(t.val)) {
      n.is_int = true;
      n.i = *i;
      if (*i == 0) n.is_uint = true;
    }
    if (n.is_int) {
      n.is_float = true;
      n.f = static_cast<double>(n.i);
    } else if (n.is_uint) {
      n.is_float = true;
      n.f = static_cast<double>(n.u);
    } else if (auto f = go_parse_float(t.val)) {
      if (t.val.find_first_of(".eEpP") == std::string::npos) errorf(fmt::format("integer overflow: {}", t.val));
      n.is_float = true;
      n.f = *f;
      if (std::isfinite(*f) && *f >= -9.2e18 && *f <= 9.2e18 && std::trunc(*f) == *f) {
        n.is_int = true;
        n.i = static_cast<std::int64_t>(*f);
      }
    }
    if (!n.is_int && !n.is_uint && !n.is_float) errorf(fmt::format("illegal number syntax: {}", go_quote(t.val)));
    return n;
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Execution (text/template/exec.go). Errors are thrown inside this file only.

struct ExecFailure {
  std::string message;
};

// Templates invoking templates are bounded, and so is the work one expansion may do: a recursive
// {{define}} must fail the expansion, not hang the rule evaluation.
constexpr int kMaxTemplateDepth = 1000;
constexpr std::size_t kMaxSteps = 1'000'000;

class Executor {
 public:
  Executor(const Tree& tree, const TemplateData& data, const TemplateQuery& query)
      : tree_(tree), env_{&data, &query}, template_name_(tree.name) {}

  std::string run() {
    const TemplateData& data = *env_.data;
    const Value dot = DataRef{&data};
    vars_.emplace_back("$", dot);
    // Prometheus's preamble: {{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}
    // {{$externalURL := .ExternalURL}}{{$value := .Value}}.
    vars_.emplace_back("$labels", field_of(data, "Labels"));
    vars_.emplace_back("$externalLabels", field_of(data, "ExternalLabels"));
    vars_.emplace_back("$externalURL", field_of(data, "ExternalURL"));
    vars_.emplace_back("$value", field_of(data, "Value"));
    walk_list(dot, tree_.root);
    return std::move(out_);
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // The node execution is at, for error messages (Go's state.at).
  struct Where {
    enum Kind { kNone, kNode, kPipe, kCommand, kArg } kind = kNone;
    const void* p = nullptr;
  };

  const Tree& tree_;
  CallEnv env_;
  std::string template_name_;
  std::vector<std::pair<std::string, Value>> vars_;
  std::string out_;
  Where at_;
  int depth_ = 0;
  std::size_t steps_ = 0;

  void at(const Node& n) { at_ = {Where::kNode, &n}; }
  void at(const Pipe& p) { at_ = {Where::kPipe, &p}; }
  void at(const Command& c) { at_ = {Where::kCommand, &c}; }
  void at(const Arg& a) { at_ = {Where::kArg, &a}; }

  [[noreturn]] void errorf(const std::string& message) const {
    std::size_t pos = 0;
    std::string context;
    switch (at_.kind) {
      case Where::kNone: throw ExecFailure{fmt::format("template: {}: {}", template_name_, message)};
      case Where::kNode:
        pos = static_cast<const Node*>(at_.p)->pos;
        context = to_string(*static_cast<const Node*>(at_.p));
        break;
      case Where::kPipe:
        pos = static_cast<const Pipe*>(at_.p)->pos;
        context = to_string(*static_cast<const Pipe*>(at_.p));
        break;
      case Where::kCommand:
        pos = static_cast<const Command*>(at_.p)->pos;
        context = to_string(*static_cast<const Command*>(at_.p));
        break;
      case Where::kArg:
        pos = static_cast<const Arg*>(at_.p)->pos;
        context = to_string(*static_cast<const Arg*>(at_.p));
        break;
    }
    const LineColumn lc = line_column(tree_.text, pos);
    throw ExecFailure{fmt::format("template: {}:{}:{}: executing {} at <{}>: {}", tree_.name, lc.line, lc.column,
                                  go_quote(template_name_), context, message)};
  }

  static Value field_of(const TemplateData& data, std::string_view name) {
    if (name == "Labels") return LabelMap{std::shared_ptr<const store::Labels>(std::shared_ptr<void>(), &data.labels)};
    if (name == "ExternalLabels") {
      return LabelMap{std::shared_ptr<const store::Labels>(std::shared_ptr<void>(), &data.external_labels)};
    }
    if (name == "ExternalURL") return data.external_url;
    return data.value;
  }

  // --- walking ---

  Flow walk_list(const Value& dot, const List& list) {
    for (const Node& n : list) {
      const Flow f = walk(dot, n);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow walk(const Value& dot, const Node& node) {
    if (++steps_ > kMaxSteps) {
      at(node);
      errorf(fmt::format("exceeded the maximum work for one expansion ({} steps)", kMaxSteps));
    }
    at(node);
    switch (node.kind) {
      case Node::Kind::kText: out_ += node.text; return Flow::kNormal;
      case Node::Kind::kAction: {
        const Value v = eval_pipeline(dot, *node.pipe);
        if (node.pipe->decls.empty()) {
          at(node);
          out_ += go_template_print(v);
        }
        return Flow::kNormal;
      }
      case Node::Kind::kIf:
      case Node::Kind::kWith: return walk_if_or_with(dot, node);
      case Node::Kind::kRange: return walk_range(dot, node);
      case Node::Kind::kTemplate: walk_template(dot, node); return Flow::kNormal;
      case Node::Kind::kBreak: return Flow::kBreak;
      case Node::Kind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  Flow walk_if_or_with(const Value& dot, const Node& node) {
    const std::size_t mark = vars_.size();
    const Value v = eval_pipeline(dot, *node.pipe);
    Flow f = Flow::kNormal;
    if (go_truth(v)) {
      f = walk_list(node.kind == Node::Kind::kWith ? v : dot, *node.list);
    } else if (node.else_list) {
      f = walk_list(dot, *node.else_list);
    }
    vars_.resize(mark);
    return f;
  }

  Flow walk_range(const Value& dot, const Node& r) {
    at(r);
    const std::size_t mark = vars_.size();
    Value v = eval_pipeline(dot, *r.pipe);
    const std::size_t body_mark = vars_.size();
    const std::size_t ndecl = r.pipe->decls.size();
    // One iteration: the last declared variable gets the element, the one before it the index or key.
    auto iterate = [&](const Value& index, const Value& elem) {
      if (ndecl > 0) vars_[vars_.size() - 1].second = elem;
      if (ndecl > 1) vars_[vars_.size() - 2].second = index;
      const Flow f = walk_list(elem, *r.list);
      vars_.resize(body_mark);
      return f;
    };
    bool ran = false;
    auto loop = [&](auto&& items) {
      for (auto&& [index, elem] : items) {
        ran = true;
        if (iterate(index, elem) == Flow::kBreak) break;
      }
    };
    std::vector<std::pair<Value, Value>> items;
    if (const auto* list = std::get_if<SampleListPtr>(&v)) {
      if (*list) {
        for (std::size_t i = 0; i < (*list)->size(); ++i) items.emplace_back(static_cast<std::int64_t>(i), (**list)[i]);
      }
    } else if (const auto* m = std::get_if<LabelMap>(&v)) {
      for (const auto& l : *m->labels) items.emplace_back(l.name, l.value);
    } else if (const auto* am = std::get_if<ArgMapPtr>(&v)) {
      if (*am) {
        for (const auto& [k, e] : (*am)->entries) items.emplace_back(k, e);
      }
    } else if (const auto* n = std::get_if<std::int64_t>(&v)) {
      if (ndecl > 1) errorf(fmt::format("can't use {} to iterate over more than one variable", *n));
      for (std::int64_t i = 0; i < *n; ++i) items.emplace_back(Nil{}, i);
    } else if (!std::holds_alternative<Nil>(v)) {
      at(r);
      // Go dereferences a pointer before ranging, so a sample reads as the struct it points to.
      const auto* s = std::get_if<SamplePtr>(&v);
      errorf(fmt::format("range can't iterate over {}",
                         s != nullptr && *s ? go_template_print(v) : go_sprint(std::span<const Value>(&v, 1))));
    }
    loop(items);
    if (!ran && r.else_list) walk_list(dot, *r.else_list);
    vars_.resize(mark);
    return Flow::kNormal;
  }

  void walk_template(const Value& dot, const Node& t) {
    at(t);
    const auto it = tree_.defined.find(t.text);
    if (it == tree_.defined.end()) errorf(fmt::format("template {} not defined", go_quote(t.text)));
    if (depth_ >= kMaxTemplateDepth) errorf(fmt::format("exceeded maximum template depth ({})", kMaxTemplateDepth));
    const Value new_dot = t.pipe ? eval_pipeline(dot, *t.pipe) : Value(Nil{});
    // No dynamic scoping: the invoked template sees only "$", set to its dot.
    auto saved_vars = std::exchange(vars_, {{"$", new_dot}});
    auto saved_name = std::exchange(template_name_, t.text);
    ++depth_;
    walk_list(new_dot, *it->second);
    --depth_;
    template_name_ = std::move(saved_name);
    vars_ = std::move(saved_vars);
  }

  // --- evaluation ---

  Value eval_pipeline(const Value& dot, const Pipe& pipe) {
    at(pipe);
    std::optional<Value> value;
    for (const Command& cmd : pipe.cmds) value = eval_command(dot, cmd, value);
    for (const std::string& name : pipe.decls) {
      if (pipe.is_assign) {
        set_var(name, *value);
      } else {
        vars_.emplace_back(name, *value);
      }
    }
    return *value;
  }

  void set_var(const std::string& name, const Value& v) {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
      if (it->first == name) {
        it->second = v;
        return;
      }
    }
    errorf("undefined variable: " + name);
  }

  Value var_value(const std::string& name) {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    errorf("undefined variable: " + name);
  }

  void not_a_function(std::span<const Arg> args, const std::optional<Value>& final) {
    if (args.size() > 1 || final) errorf("can't give argument to non-function " + to_string(args[0]));
  }

  Value eval_command(const Value& dot, const Command& cmd, const std::optional<Value>& final) {
    const Arg& first = cmd.args[0];
    const std::span<const Arg> args(cmd.args);
    switch (first.kind) {
      case Arg::Kind::kField: return eval_field_node(dot, first, args, final);
      case Arg::Kind::kChain: return eval_chain_node(dot, first, args, final);
      case Arg::Kind::kIdentifier: return eval_function(dot, first, Where{Where::kCommand, &cmd}, args, final);
      case Arg::Kind::kPipe:
        not_a_function(args, final);
        return eval_pipeline(dot, *first.pipe);
      case Arg::Kind::kVariable: return eval_variable_node(dot, first, args, final);
      default: break;
    }
    at(first);
    not_a_function(args, final);
    switch (first.kind) {
      case Arg::Kind::kBool: return first.boolean;
      case Arg::Kind::kDot: return dot;
      case Arg::Kind::kNil: errorf("nil is not a command");
      case Arg::Kind::kNumber: return ideal_constant(first);
      case Arg::Kind::kString: return first.text;
      default: errorf("can't evaluate command " + go_quote(to_string(first)));
    }
  }

  // A number whose type the context does not fix: its spelling decides, as in Go (1 is an int, 1.0 a
  // float64).
  Value ideal_constant(const Arg& c) {
    at(c);
    const bool hex_int = c.text.size() > 2 && c.text[0] == '0' && (c.text[1] == 'x' || c.text[1] == 'X') &&
                         c.text.find_first_of("pP") == std::string::npos;
    const bool rune_int = !c.text.empty() && c.text[0] == '\'';
    if (c.number.is_float && !hex_int && !rune_int && c.text.find_first_of(".eEpP") != std::string::npos) {
      return c.number.f;
    }
    if (c.number.is_int) return c.number.i;
    if (c.number.is_uint) errorf(c.text + " overflows int");
    return Nil{};
  }

  Value eval_field_node(const Value& dot, const Arg& field, std::span<const Arg> args, const std::optional<Value>& final) {
    at(field);
    return eval_field_chain(dot, dot, field.idents, args, final);
  }

  Value eval_chain_node(const Value& dot, const Arg& chain, std::span<const Arg> args, const std::optional<Value>& final) {
    at(chain);
    if (chain.node->kind == Arg::Kind::kNil) errorf("indirection through explicit nil in " + to_string(chain));
    const Value receiver = eval_arg(dot, Param::kAny, *chain.node);
    return eval_field_chain(dot, receiver, chain.idents, args, final);
  }

  Value eval_variable_node(const Value& dot, const Arg& var, std::span<const Arg> args, const std::optional<Value>& final) {
    at(var);
    const Value value = var_value(var.idents[0]);
    if (var.idents.size() == 1) {
      if (!args.empty()) not_a_function(args, final);
      return value;
    }
    return eval_field_chain(dot, value, std::span<const std::string>(var.idents).subspan(1), args, final);
  }

  Value eval_field_chain(const Value& dot, Value receiver, std::span<const std::string> idents, std::span<const Arg> args,
                         const std::optional<Value>& final) {
    for (std::size_t i = 0; i + 1 < idents.size(); ++i) receiver = eval_field(dot, idents[i], {}, std::nullopt, receiver);
    return eval_field(dot, idents.back(), args, final, receiver);
  }

  Value eval_field(const Value&, const std::string& name, std::span<const Arg> args, const std::optional<Value>& final,
                   const Value& receiver) {
    // Prometheus runs templates with missingkey=zero: reading through nothing yields nothing.
    if (std::holds_alternative<Nil>(receiver)) return Nil{};
    const bool has_args = args.size() > 1 || final.has_value();
    if (const auto* d = std::get_if<DataRef>(&receiver)) {
      if (name == "Labels" || name == "ExternalLabels" || name == "ExternalURL" || name == "Value") {
        if (has_args) errorf(name + " has arguments but cannot be invoked as function");
        return field_of(*d->data, name);
      }
    } else if (const auto* s = std::get_if<SamplePtr>(&receiver)) {
      if (name == "Labels" || name == "Value") {
        if (!*s) errorf(fmt::format("nil pointer evaluating *template.sample.{}", name));
        if (has_args) errorf(name + " has arguments but cannot be invoked as function");
        if (name == "Value") return (*s)->value;
        return LabelMap{std::shared_ptr<const store::Labels>(*s, &(*s)->labels)};
      }
    } else if (const auto* m = std::get_if<LabelMap>(&receiver)) {
      if (has_args) errorf(name + " is not a method but has arguments");
      return std::string(m->labels->get(name));
    } else if (const auto* am = std::get_if<ArgMapPtr>(&receiver)) {
      if (has_args) errorf(name + " is not a method but has arguments");
      if (*am) {
        for (const auto& [k, v] : (*am)->entries) {
          if (k == name) return v;
        }
      }
      return Nil{};
    }
    errorf(fmt::format("can't evaluate field {} in type {}", name, go_type_name(receiver)));
  }

  Value eval_function(const Value& dot, const Arg& ident, Where where, std::span<const Arg> args,
                      const std::optional<Value>& final) {
    at(ident);
    return eval_call(dot, *ident.function, where, args, final);
  }

  // `args` holds the function's node first (Go's convention), or nothing when the function is an argument.
  Value eval_call(const Value& dot, const Function& fn, Where where, std::span<const Arg> args,
                  const std::optional<Value>& final) {
    const std::string name(fn.name);
    if (!args.empty()) args = args.subspan(1);
    const std::size_t num_in = args.size() + (final ? 1 : 0);
    std::size_t num_fixed = args.size();
    if (fn.variadic) {
      num_fixed = fn.params.size() - 1;
      if (num_in < num_fixed) {
        errorf(fmt::format("wrong number of args for {}: want at least {} got {}", name, num_fixed, args.size()));
      }
    } else if (num_in != fn.params.size()) {
      errorf(fmt::format("wrong number of args for {}: want {} got {}", name, fn.params.size(), num_in));
    }
    if (fn.special == Special::kAnd || fn.special == Special::kOr) {
      // and/or short-circuit: later arguments are not evaluated.
      Value v = Nil{};
      for (const Arg& a : args) {
        v = eval_arg(dot, Param::kAny, a);
        if (go_truth(v) == (fn.special == Special::kOr)) return v;
      }
      if (final) v = *final;
      return v;
    }
    std::vector<Value> argv;
    argv.reserve(num_in);
    std::size_t i = 0;
    for (; i < num_fixed && i < args.size(); ++i) argv.push_back(eval_arg(dot, fn.params[i], args[i]));
    if (fn.variadic) {
      for (; i < args.size(); ++i) argv.push_back(eval_arg(dot, fn.params.back(), args[i]));
    }
    if (final) {
      Param t = fn.params.back();
      if (fn.variadic && num_in - 1 < num_fixed) t = fn.params[num_in - 1];
      argv.push_back(validate_type(*final, t));
    }
    if (fn.special == Special::kCall) {
      // There are no function values in rule templates, so `call` always fails as Go's does on a non-function.
      const std::string callee = args.empty() ? go_sprint(std::span<const Value>(&*final, 1)) : to_string(args[0]);
      at_ = where;
      if (std::holds_alternative<Nil>(argv[0])) errorf("error calling call: call of nil");
      errorf(fmt::format("error calling call: non-function {} of type {}", callee, go_type_name(argv[0])));
    }
    auto result = fn.impl(env_, argv);
    if (!result) {
      at_ = where;
      errorf(fmt::format("error calling {}: {}", name, result.error()));
    }
    return std::move(*result);
  }

  static bool can_be_nil(Param p) { return p != Param::kString; }
  static Value zero(Param p) {
    switch (p) {
      case Param::kSample: return SamplePtr{};
      case Param::kSampleList: return SampleListPtr{};
      default: return Nil{};
    }
  }

  Value validate_type(const Value& v, Param p) {
    switch (p) {
      case Param::kAny: return v;
      case Param::kString:
        if (std::holds_alternative<std::string>(v)) return v;
        if (std::holds_alternative<Nil>(v)) errorf("invalid value; expected string");
        break;
      case Param::kSample:
        if (std::holds_alternative<SamplePtr>(v)) return v;
        if (std::holds_alternative<Nil>(v)) return zero(p);
        break;
      case Param::kSampleList:
        if (std::holds_alternative<SampleListPtr>(v)) return v;
        if (std::holds_alternative<Nil>(v)) return zero(p);
        break;
    }
    errorf(fmt::format("wrong type for value; expected {}; got {}", param_type_name(p), go_type_name(v)));
  }

  Value eval_arg(const Value& dot, Param p, const Arg& a) {
    at(a);
    switch (a.kind) {
      case Arg::Kind::kDot: return validate_type(dot, p);
      case Arg::Kind::kNil:
        if (can_be_nil(p)) return zero(p);
        errorf(fmt::format("cannot assign nil to {}", param_type_name(p)));
      case Arg::Kind::kField: return validate_type(eval_field_node(dot, a, std::span<const Arg>(&a, 1), std::nullopt), p);
      case Arg::Kind::kVariable: return validate_type(eval_variable_node(dot, a, {}, std::nullopt), p);
      case Arg::Kind::kPipe: return validate_type(eval_pipeline(dot, *a.pipe), p);
      case Arg::Kind::kIdentifier:
        return validate_type(eval_function(dot, a, Where{Where::kArg, &a}, {}, std::nullopt), p);
      case Arg::Kind::kChain: return validate_type(eval_chain_node(dot, a, {}, std::nullopt), p);
      default: break;
    }
    switch (p) {
      case Param::kAny:
        if (a.kind == Arg::Kind::kBool) return a.boolean;
        if (a.kind == Arg::Kind::kNumber) return ideal_constant(a);
        return a.text;  // a string literal
      case Param::kString:
        if (a.kind == Arg::Kind::kString) return a.text;
        errorf("expected string; found " + to_string(a));
      default: errorf(fmt::format("can't handle {} for arg of type {}", to_string(a), param_type_name(p)));
    }
  }
};

}  // namespace
}  // namespace template_internal

using template_internal::ExecFailure;
using template_internal::ParseFailure;

std::expected<Template, std::string> Template::parse(std::string_view name, std::string_view text) {
  auto tree = std::make_shared<template_internal::Tree>();
  tree->name = std::string(name);
  tree->text = std::string(text);
  try {
    // Prometheus prepends declarations of these four to every rule template.
    template_internal::Parser parser(*tree, {"$", "$labels", "$externalLabels", "$externalURL", "$value"});
    parser.parse();
  } catch (const ParseFailure& f) {
    const auto lc = template_internal::line_column(tree->text, f.pos);
    return std::unexpected(fmt::format("line {}:{}: {}", lc.line, lc.column, f.message));
  }
  return Template(std::move(tree));
}

std::expected<std::string, std::string> Template::expand(const TemplateData& data, const TemplateQuery& query) const {
  try {
    return template_internal::Executor(*tree_, data, query).run();
  } catch (const ExecFailure& f) {
    return std::unexpected(fmt::format("error executing template {}: {}", tree_->name, f.message));
  }
}

const std::string& Template::name() const { return tree_->name; }

}  // namespace gpuscope::rules
