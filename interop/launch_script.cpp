#include "interop/launch_script.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "common/error.h"

namespace cs::interop {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool ifs(char c) { return c == ' ' || c == '\t' || c == '\n'; }
bool ends_word(char c) {
  return blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
         c == '<' || c == '>';
}

// One part of a word as written: text, a variable, a whole array, or something not run ($(...),
// `...`, $1 unset) that expands to its own source text.
struct Piece {
  enum class Kind { literal, variable, array, source };
  Kind kind = Kind::literal;
  std::string text;      // the literal, the variable's name, or the source text
  std::string source;    // a variable as written, its expansion when it is unset
  std::string fallback;  // ${X:-fallback}, as written
  bool has_fallback = false;
  bool fallback_if_empty = false;  // ":-" (empty counts as unset) rather than "-"
  bool quoted = false;             // inside "...": not split into words
};
using Word = std::vector<Piece>;

enum class TokenKind { word, separator, array_open, close, redirect, heredoc, end };
struct Token {
  TokenKind kind = TokenKind::end;
  int line = 0;
  Word word;
  std::string name;         // array_open: the array
  bool append = false;      // array_open: NAME+=(
  bool strip_tabs = false;  // heredoc: <<-
};

// "NAME=" or "NAME+=" at the start of an unquoted literal: the name, whether it appends, and
// where the value starts (0 when the text is no assignment).
size_t assignment_prefix(const Piece& p, std::string& name, bool& append) {
  if (p.kind != Piece::Kind::literal || p.quoted || p.text.empty() || !name_start(p.text[0]))
    return 0;
  size_t k = 1;
  while (k < p.text.size() && name_char(p.text[k])) ++k;
  append = k + 1 < p.text.size() && p.text[k] == '+' && p.text[k + 1] == '=';
  if (!append && (k >= p.text.size() || p.text[k] != '=')) return 0;
  name = p.text.substr(0, k);
  return k + (append ? 2 : 1);
}

// Splits the script into words, separators and assignments' array brackets, left to right.
class Lexer {
 public:
  Lexer(std::string_view text, std::string file) : t_(text), file_(std::move(file)) {}

  [[noreturn]] void fail(int line, const std::string& msg) const {
    throw UserError(file_ + ":" + std::to_string(line) + ": " + msg);
  }

  Token next() {
    for (;;) {
      while (i_ < t_.size() && (blank(t_[i_]) || continued())) take(blank(t_[i_]) ? 1 : 2);
      if (i_ < t_.size() && t_[i_] == '#') {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
        continue;
      }
      break;
    }
    Token tok;
    tok.line = line_;
    if (i_ >= t_.size()) return tok;
    const char c = t_[i_];
    if (c == '\n') {
      take(1);
      skip_heredoc_bodies();
      tok.kind = TokenKind::separator;
    } else if (c == '&' && peek(1) == '>') {
      take(peek(2) == '>' ? 3 : 2);
      tok.kind = TokenKind::redirect;
    } else if (c == ';' || c == '&' || c == '|') {
      take(peek(1) == ';' || peek(1) == '&' || peek(1) == '|' ? 2 : 1);
      tok.kind = TokenKind::separator;
    } else if (c == '(' || c == ')') {
      take(1);
      tok.kind = c == '(' ? TokenKind::separator : TokenKind::close;
    } else if (c == '<' || c == '>') {
      redirect(tok);
    } else {
      word(tok);
    }
    return tok;
  }

  // After the next newline, the lines up to `delimiter` are a here-document's body: skipped.
  void expect_heredoc(std::string delimiter, bool strip_tabs) {
    heredocs_.emplace_back(std::move(delimiter), strip_tabs);
  }

 private:
  char peek(size_t k) const { return i_ + k < t_.size() ? t_[i_ + k] : '\0'; }
  bool continued() const { return t_[i_] == '\\' && peek(1) == '\n'; }
  std::string_view take(size_t n) {
    const std::string_view s = t_.substr(i_, n);
    for (char c : s) line_ += c == '\n';
    i_ += s.size();
    return s;
  }

  void skip_heredoc_bodies() {
    for (const auto& [delimiter, strip_tabs] : heredocs_) {
      const int start = line_;
      for (;;) {
        if (i_ >= t_.size()) fail(start, "here-document without its end line '" + delimiter + "'");
        const size_t eol = std::min(t_.find('\n', i_), t_.size());
        std::string_view line = t_.substr(i_, eol - i_);
        while (strip_tabs && !line.empty() && line.front() == '\t') line.remove_prefix(1);
        take(eol - i_ + (eol < t_.size() ? 1 : 0));
        if (line == delimiter) break;
      }
    }
    heredocs_.clear();
  }

  void redirect(Token& tok) {
    if (t_.compare(i_, 3, "<<<") == 0) {
      take(3);
      tok.kind = TokenKind::redirect;
    } else if (t_.compare(i_, 2, "<<") == 0) {
      tok.strip_tabs = peek(2) == '-';
      take(tok.strip_tabs ? 3 : 2);
      tok.kind = TokenKind::heredoc;
    } else {
      size_t n = 1;
      while (n < 3 && (peek(n) == '>' || peek(n) == '&' || peek(n) == '|')) ++n;
      if (peek(n) == '-') ++n;  // >&- closes
      take(n);
      tok.kind = TokenKind::redirect;
    }
  }

  void literal(Word& w, std::string_view s, bool quoted) {
    if (!w.empty() && w.back().kind == Piece::Kind::literal && w.back().quoted == quoted) {
      w.back().text += s;
    } else {
      Piece p;
      p.text = s;
      p.quoted = quoted;
      w.push_back(std::move(p));
    }
  }
  void source(Word& w, std::string_view s) {
    Piece p;
    p.kind = Piece::Kind::source;
    p.text = s;
    w.push_back(std::move(p));
  }

  void word(Token& tok) {
    tok.kind = TokenKind::word;
    Word& w = tok.word;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (ends_word(c)) {
        std::string name;
        if (c == '(' && w.size() == 1 &&
            assignment_prefix(w[0], name, tok.append) == w[0].text.size()) {
          take(1);
          tok.kind = TokenKind::array_open;
          tok.name = name;
          w.clear();
          return;
        }
        const bool io_number = (c == '<' || c == '>') && w.size() == 1 && !w[0].quoted &&
                               w[0].text.find_first_not_of("0123456789") == std::string::npos;
        if (io_number) {  // 2>&1: the 2 is the redirection's, not a word
          w.clear();
          redirect(tok);
        }
        return;
      }
      if (c == '\\') {
        if (peek(1) == '\n') {
          take(2);
        } else {
          take(1);
          literal(w, take(1), true);
        }
      } else if (c == '\'') {
        single_quoted(w);
      } else if (c == '"') {
        take(1);
        double_quoted(w);
      } else if (c == '$') {
        dollar(w, false);
      } else if (c == '`') {
        source(w, take(closing(i_, '`') - i_));
      } else {
        literal(w, take(1), false);
      }
    }
  }

  void single_quoted(Word& w) {
    const size_t end = t_.find('\'', i_ + 1);
    if (end == std::string_view::npos) fail(line_, "unterminated single quote");
    take(1);
    literal(w, take(end - i_), true);
    take(1);
  }

  void double_quoted(Word& w) {
    const int start = line_;
    literal(w, "", true);  // "" is a word
    for (;;) {
      if (i_ >= t_.size()) fail(start, "unterminated double quote");
      const char c = t_[i_];
      if (c == '"') {
        take(1);
        return;
      }
      if (c == '\\' && peek(1) == '\n') {
        take(2);
      } else if (c == '\\' && std::string_view("$`\"\\").find(peek(1)) != std::string_view::npos) {
        take(1);
        literal(w, take(1), true);
      } else if (c == '$') {
        dollar(w, true);
      } else if (c == '`') {
        source(w, take(closing(i_, '`') - i_));
      } else {
        literal(w, take(1), true);
      }
    }
  }

  void dollar(Word& w, bool quoted) {
    const char n = peek(1);
    if (n == '{') {
      const size_t end = closing(i_ + 1, '{');
      const std::string_view all = t_.substr(i_, end - i_);
      braced(w, all, all.substr(2, all.size() - 3), quoted);
      take(end - i_);
    } else if (n == '(') {
      source(w, take(closing(i_ + 1, '(') - i_));
    } else if (n == '\'' && !quoted) {  // $'...': kept as written inside
      take(1);
      single_quoted(w);
    } else if (n == '"' && !quoted) {  // $"...": a translated string, read as "..."
      take(2);
      double_quoted(w);
    } else if (name_start(n)) {
      size_t k = 2;
      while (name_char(peek(k))) ++k;
      Piece p;
      p.kind = Piece::Kind::variable;
      p.source = take(k);
      p.text = p.source.substr(1);
      p.quoted = quoted;
      w.push_back(std::move(p));
    } else if (n != '\0' &&
               std::string_view("0123456789@*#?$!-").find(n) != std::string_view::npos) {
      source(w, take(2));  // positional and special parameters: not known before the run
    } else {
      literal(w, take(1), quoted);
    }
  }

  // ${inner}: NAME, NAME[@], NAME[*], NAME:-word, NAME-word (a digit NAME is a positional
  // parameter, never set); anything else (${#X}, ${X%.*}, ...) stays as written.
  void braced(Word& w, std::string_view all, std::string_view inner, bool quoted) {
    Piece p;
    p.kind = Piece::Kind::source;
    p.text = all;
    p.source = all;
    p.quoted = quoted;
    size_t k = 0;
    if (!inner.empty() && name_start(inner[0])) {
      while (k < inner.size() && name_char(inner[k])) ++k;
    } else {
      while (k < inner.size() && std::isdigit(static_cast<unsigned char>(inner[k]))) ++k;
    }
    const std::string_view rest = inner.substr(k);
    if (k > 0) {
      if (rest.empty()) {
        p.kind = Piece::Kind::variable;
      } else if (rest == "[@]" || rest == "[*]") {
        p.kind = Piece::Kind::array;
      } else if (rest.substr(0, 2) == ":-" || rest.substr(0, 2) == ":=") {
        p.kind = Piece::Kind::variable;
        p.has_fallback = p.fallback_if_empty = true;
        p.fallback = rest.substr(2);
      } else if (rest[0] == '-' || rest[0] == '=') {
        p.kind = Piece::Kind::variable;
        p.has_fallback = true;
        p.fallback = rest.substr(1);
      }
      p.text = inner.substr(0, k);
    }
    w.push_back(std::move(p));
  }

  // The index just past what closes the construct opening at `pos` ('{' of ${, '(' of $( or $((,
  // '`'), over nested quotes and substitutions: an explicit stack of the closers awaited.
  size_t closing(size_t pos, char open) const {
    std::vector<char> awaited = {open == '{' ? '}' : open == '(' ? ')' : '`'};
    size_t k = pos + 1;
    auto at = [&](size_t j) { return j < t_.size() ? t_[j] : '\0'; };
    while (k < t_.size() && !awaited.empty()) {
      const char c = t_[k];
      const char top = awaited.back();
      if (top == '\'') {
        if (c == '\'') awaited.pop_back();
      } else if (c == '\\') {
        ++k;
      } else if (c == top) {
        awaited.pop_back();
      } else if (c == '$' && (at(k + 1) == '(' || at(k + 1) == '{')) {
        awaited.push_back(at(k + 1) == '(' ? ')' : '}');
        ++k;
      } else if (c == '`' || c == '"' || (c == '\'' && top != '"')) {
        awaited.push_back(c);
      } else if (c == '(' && top == ')') {
        awaited.push_back(')');
      }
      ++k;
    }
    if (!awaited.empty()) {
      int line = line_;
      for (char c : t_.substr(i_, pos - i_)) line += c == '\n';
      fail(line, std::string("unterminated ") + (open == '{'   ? "${...}"
                                                 : open == '(' ? "$(...)"
                                                               : "`...`"));
    }
    return k;
  }

  std::string_view t_;
  std::string file_;
  size_t i_ = 0;
  int line_ = 1;
  std::vector<std::pair<std::string, bool>> heredocs_;
};

// Reads the commands one after the other: assignments update the variables, every other word
// is expanded with the variables as they stand and kept.
class ScriptReader {
 public:
  ScriptReader(std::string_view text, const std::string& file) : lex_(text, file), file_(file) {}

  LaunchScript read() {
    Token t = lex_.next();
    bool command_start = true;  // where an assignment or a reserved word may stand
    while (t.kind != TokenKind::end) {
      switch (t.kind) {
        case TokenKind::separator:
        case TokenKind::close:
          command_start = true;
          declaring_ = false;
          break;
        case TokenKind::redirect:
        case TokenKind::heredoc: {
          Token target = lex_.next();
          if (target.kind != TokenKind::word) {  // no target: read it as the next token
            t = std::move(target);
            continue;
          }
          if (t.kind == TokenKind::heredoc)
            lex_.expect_heredoc(join(expand(target.word, false, target.line, "a word")),
                                t.strip_tabs);
          break;
        }
        case TokenKind::array_open:
          array_assignment(t);
          break;
        case TokenKind::word:
          command_start = command_word(t, command_start);
          break;
        case TokenKind::end:
          break;
      }
      t = lex_.next();
    }
    return std::move(out_);
  }

 private:
  // Returns whether an assignment may still follow.
  bool command_word(const Token& t, bool command_start) {
    const Word& w = t.word;
    const std::string first =
        w.size() == 1 && w[0].kind == Piece::Kind::literal && !w[0].quoted ? w[0].text : "";
    if (command_start) {
      static const std::vector<std::string> kReserved = {
          "if",    "then",   "else", "elif", "fi", "case", "esac", "for",  "while",
          "until", "select", "do",   "done", "{",  "}",    "!",    "time", "function"};
      static const std::vector<std::string> kDeclarations = {"export", "declare", "local",
                                                             "readonly", "typeset"};
      if (std::find(kReserved.begin(), kReserved.end(), first) != kReserved.end()) {
        note_unevaluated(first, t.line);
        return true;
      }
      if (std::find(kDeclarations.begin(), kDeclarations.end(), first) != kDeclarations.end())
        return declaring_ = true;
      if (declaring_ && !first.empty() && first[0] == '-') return true;  // declare -a
      std::string name;
      bool append = false;
      if (const size_t at = w.empty() ? 0 : assignment_prefix(w[0], name, append)) {
        Word value = w;
        value[0].text = value[0].text.substr(at);
        assign(name, append, {join(expand(value, false, t.line, "the value of " + name))}, t.line);
        return true;
      }
      if (declaring_) return true;  // export NAME
    }
    for (auto& field : expand(w, true, t.line, "a word")) {
      words_chars_ += field.size() + 1;
      if (words_chars_ > kMaxWordChars)
        lex_.fail(t.line, "the command words expand past " + std::to_string(kMaxWordChars) +
                              " characters, the bound for a launch script (" +
                              kLaunchScriptBoundsWhy + ")");
      out_.words.push_back(std::move(field));
    }
    return false;
  }

  // One note, at the first condition or loop, that the script's branches were all read.
  void note_unevaluated(const std::string& reserved, int line) {
    static const std::vector<std::string> kConditions = {"if",    "case",  "for",
                                                         "while", "until", "select"};
    if (noted_condition_ ||
        std::find(kConditions.begin(), kConditions.end(), reserved) == kConditions.end())
      return;
    noted_condition_ = true;
    out_.notes.push_back(file_ + ":" + std::to_string(line) + ": '" + reserved +
                         "' is not evaluated: every branch and loop body is read once, in order, "
                         "the last assignment winning");
  }

  void array_assignment(const Token& open) {
    std::vector<std::string> items;
    size_t chars = 0;
    for (Token t = lex_.next(); t.kind != TokenKind::close; t = lex_.next()) {
      if (t.kind == TokenKind::end) lex_.fail(open.line, "array " + open.name + "=( without ')'");
      if (t.kind != TokenKind::word) continue;  // newlines inside ( ... )
      for (auto& f : expand(t.word, true, t.line, "the value of " + open.name)) {
        chars += f.size() + 1;
        bound(chars, "the value of " + open.name, t.line);
        items.push_back(std::move(f));
      }
    }
    assign(open.name, open.append, std::move(items), open.line);
  }

  void assign(const std::string& name, bool append, std::vector<std::string> items, int line) {
    std::vector<std::string>& v = vars_[name];
    if (!append) v.clear();
    if (append && v.size() == 1 && items.size() == 1) {
      v[0] += items[0];  // X+=text appends to the text
    } else {
      v.insert(v.end(), std::make_move_iterator(items.begin()),
               std::make_move_iterator(items.end()));
    }
    size_t chars = 0;
    for (const auto& s : v) chars += s.size() + 1;
    bound(chars, "the value of " + name, line);
  }

  void bound(size_t chars, const std::string& what, int line) const {
    if (chars > kMaxValueChars)
      lex_.fail(line, what + " expands past " + std::to_string(kMaxValueChars) +
                          " characters, the bound for one variable or word (" +
                          kLaunchScriptBoundsWhy + ")");
  }

  static std::string join(const std::vector<std::string>& fields) {
    std::string s;
    for (const auto& f : fields) s += (s.empty() ? "" : " ") + f;
    return s;
  }

  // ${X:-fallback}'s fallback: quotes dropped, $NAME and ${NAME} substituted (one level).
  std::string fallback_text(const std::string& f) const {
    std::string s;
    for (size_t k = 0; k < f.size(); ++k) {
      if (f[k] == '"' || f[k] == '\'') continue;
      size_t end = k + 1;
      const bool brace = f[k] == '$' && end < f.size() && f[end] == '{';
      if (f[k] == '$' && end + brace < f.size() && name_start(f[end + brace])) {
        end += brace;
        while (end < f.size() && name_char(f[end])) ++end;
        if (!brace || (end < f.size() && f[end] == '}')) {
          const std::string name = f.substr(k + 1 + brace, end - k - 1 - brace);
          const auto it = vars_.find(name);
          s += it != vars_.end() && !it->second.empty() ? it->second[0]
                                                        : f.substr(k, end + brace - k);
          k = end + brace - 1;
          continue;
        }
      }
      s += f[k];
    }
    return s;
  }

  // The values a piece stands for (one, or an array's elements); `split` whether they are
  // split at blanks (unquoted); an unset variable stands for its own source text, unsplit.
  std::vector<std::string> values(const Piece& p, bool& split) const {
    split = !p.quoted && (p.kind == Piece::Kind::variable || p.kind == Piece::Kind::array);
    if (p.kind == Piece::Kind::literal || p.kind == Piece::Kind::source) return {p.text};
    const auto it = vars_.find(p.text);
    const bool set = it != vars_.end() &&
                     !(p.fallback_if_empty && (it->second.empty() || it->second[0].empty()));
    if (!set && p.has_fallback) return {fallback_text(p.fallback)};
    if (it == vars_.end()) {
      split = false;
      return {p.source};
    }
    if (p.kind == Piece::Kind::variable)
      return {it->second.empty() ? std::string() : it->second[0]};
    return it->second;
  }

  // A word's fields: unquoted expansions split at blanks when `split`, "${A[@]}" one field per
  // element; the sizes are bounded as they grow.
  std::vector<std::string> expand(const Word& w, bool split, int line, const std::string& what) {
    std::vector<std::string> fields;
    std::string cur;
    bool have = false;
    size_t chars = 0;
    auto push = [&] {
      if (have) fields.push_back(std::move(cur));
      cur.clear();
      have = false;
    };
    for (const Piece& p : w) {
      bool split_this = false;
      const std::vector<std::string> vs = values(p, split_this);
      for (size_t k = 0; k < vs.size(); ++k) {
        chars += vs[k].size() + 1;
        bound(chars, what, line);
        if (k > 0 && split) push();       // "${A[@]}": a field per element
        if (k > 0 && !split) cur += ' ';  // X=${A[@]}: the elements joined
        if (!(split && split_this)) {
          cur += vs[k];
          have = true;
          continue;
        }
        for (char c : vs[k]) {
          if (ifs(c)) {
            push();
          } else {
            cur += c;
            have = true;
          }
        }
      }
    }
    push();
    return fields;
  }

  Lexer lex_;
  std::string file_;
  std::map<std::string, std::vector<std::string>> vars_;
  LaunchScript out_;
  size_t words_chars_ = 0;
  bool declaring_ = false;
  bool noted_condition_ = false;
};

}  // namespace

LaunchScript read_launch_script(const std::string& text, const std::string& file) {
  if (text.size() > kMaxScriptBytes)
    throw UserError(file + ": " + std::to_string(text.size()) + " bytes; the bound for a launch " +
                    "script is " + std::to_string(kMaxScriptBytes) + " bytes (" +
                    kLaunchScriptBoundsWhy + ")");
  int line = 1;
  for (size_t start = 0; start < text.size(); ++line) {
    const size_t eol = std::min(text.find('\n', start), text.size());
    if (eol - start > kMaxLineChars)
      throw UserError(file + ":" + std::to_string(line) + ": a line of " +
                      std::to_string(eol - start) + " characters; the bound is " +
                      std::to_string(kMaxLineChars) + " characters a line (" +
                      kLaunchScriptBoundsWhy + ")");
    start = eol + 1;
  }
  return ScriptReader(text, file).read();
}

}  // namespace cs::interop
