"""POSIX extended regular expressions, matched in time linear in the text.

`--verify-diagnostics`' `expected-*-re` patterns are llvm::Regex's (POSIX ERE) in mlir-opt.
Python's `re` backtracks: `(a|a)*Z` against a message of 40 `a`s takes days, and a message
holds what the input spells (an unknown op's name). Here a pattern is compiled to a Thompson
NFA of at most `MAX_STATES` states and run over the text once, every state in step: at most
states x (characters + 1) steps, whatever the pattern.

The syntax is llvm::Regex's: `.`, bracket expressions with ranges and `[:alpha:]`-style classes,
`( )`, `|`, `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` (counts up to 255), `^` and `$`, and `\\`
quoting the character after it. Backreferences and Perl escapes (`\\d`, `\\w`, `\\s`, ...) are
refused by name: llvm::Regex reads `\\d` as a plain `d`, which no one writing it meant.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_STATES = 10_000  # a pattern compiling to more is refused: its steps are states x text
MAX_REPEAT = 255  # POSIX's RE_DUP_MAX, llvm::Regex's limit on a count
MAX_GROUP_DEPTH = 100  # parentheses nested deeper are refused: the parser recurses per group


class RegexError(ValueError):
    """A pattern that is no POSIX ERE, with llvm::Regex's wording of why where it has one."""


_CLASSES: dict[str, Callable[[str], bool]] = {
    "alpha": str.isalpha,
    "digit": lambda c: "0" <= c <= "9",
    "alnum": lambda c: c.isalpha() or "0" <= c <= "9",
    "upper": str.isupper,
    "lower": str.islower,
    "space": lambda c: c in " \t\n\r\f\v",
    "blank": lambda c: c in " \t",
    "punct": lambda c: c.isascii() and c.isprintable() and not c.isalnum() and c != " ",
    "print": lambda c: c.isprintable(),
    "graph": lambda c: c.isprintable() and c != " ",
    "cntrl": lambda c: not c.isprintable(),
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}

# One NFA state: (kind, a, b). CHAR: `a` is a predicate on a character, `b` the next state;
# SPLIT: `a` and `b` the two next states; BOL/EOL: an anchor, `b` the next state; MATCH.
CHAR, SPLIT, BOL, EOL, MATCH = range(5)

# The syntax tree: ("char", predicate) | ("bol",) | ("eol",) | ("cat", [nodes])
# | ("alt", [nodes]) | ("repeat", node, least, most or None)
Node = tuple


class _Parser:
    """Recursive descent over one pattern, its groups at most `MAX_GROUP_DEPTH` deep."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0
        self.depth = 0

    def peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def alternation(self) -> Node:
        branches = [self.branch()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.branch())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def branch(self) -> Node:
        pieces: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            pieces.append(self.piece())
        if not pieces:
            raise RegexError("empty (sub)expression")
        return pieces[0] if len(pieces) == 1 else ("cat", pieces)

    def piece(self) -> Node:
        atom = self.atom()
        if self.peek() in ("*", "+", "?") or self._bound_follows():
            atom = self.repetition(atom)
            if self.peek() in ("*", "+", "?") or self._bound_follows():
                raise RegexError("repetition-operator operand invalid")
        return atom

    def _bound_follows(self) -> bool:
        return self.peek() == "{" and self.peek(1).isdigit()

    def repetition(self, atom: Node) -> Node:
        op = self.peek()
        self.pos += 1
        if op != "{":
            least, most = {"*": (0, None), "+": (1, None), "?": (0, 1)}[op]
            return ("repeat", atom, least, most)
        least = self.count()
        most: int | None = least
        if self.peek() == ",":
            self.pos += 1
            most = self.count() if self.peek().isdigit() else None
        if self.peek() != "}":
            raise RegexError("braces not balanced")
        self.pos += 1
        if most is not None and most < least:
            raise RegexError("invalid repetition count(s)")
        return ("repeat", atom, least, most)

    def count(self) -> int:
        start = self.pos
        while self.peek().isdigit():
            self.pos += 1
        if self.pos == start:
            raise RegexError("invalid repetition count(s)")
        value = int(self.text[start : self.pos])
        if value > MAX_REPEAT:
            raise RegexError("invalid repetition count(s)")
        return value

    def atom(self) -> Node:
        c = self.peek()
        self.pos += 1
        if c == "(":
            if not self.peek():
                raise RegexError("parentheses not balanced")
            self.depth += 1
            if self.depth > MAX_GROUP_DEPTH:
                raise RegexError(f"parentheses nest deeper than {MAX_GROUP_DEPTH}")
            inner = self.alternation()
            if self.peek() != ")":
                raise RegexError("parentheses not balanced")
            self.pos += 1
            self.depth -= 1
            return inner
        if c in ("*", "+", "?") or (c == "{" and self.peek().isdigit()):
            raise RegexError("repetition-operator operand invalid")
        if c == ".":
            return ("char", _any)
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == "[":
            return ("char", self.bracket())
        if c == "\\":
            return ("char", _equal(self.escaped()))
        return ("char", _equal(c))

    def escaped(self) -> str:
        c = self.peek()
        if not c:
            raise RegexError("trailing backslash (\\)")
        self.pos += 1
        if c.isdigit():
            raise RegexError(f"backreference \\{c}: not supported (matching it needs backtracking)")
        if c.isalpha():
            raise RegexError(
                f"\\{c} is not POSIX ERE (llvm::Regex reads it as '{c}'): use a bracket"
                " expression such as [0-9] or [[:space:]]"
            )
        return c

    def bracket(self) -> Callable[[str], bool]:
        """A bracket expression after its `[`: a `]` first is a member, so is a `-` first or
        last; a backslash is itself (POSIX)."""
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        chars: set[str] = set()
        tests: list[Callable[[str], bool]] = []
        first = True
        while True:
            if not self.peek():
                raise RegexError("brackets ([ ]) not balanced")
            if self.peek() == "]" and not first:
                self.pos += 1
                break
            first = False
            low = self.bracket_term()
            if callable(low):
                tests.append(low)
            elif self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self.bracket_term()
                if callable(high) or high < low:
                    raise RegexError("invalid character range")
                tests.append(lambda c, lo=low, hi=high: lo <= c <= hi)
            else:
                chars.add(low)
        members = frozenset(chars)

        def member(c: str) -> bool:
            return c in members or any(test(c) for test in tests)

        return (lambda c: not member(c)) if negated else member

    def bracket_term(self) -> str | Callable[[str], bool]:
        """One character of a bracket expression, or a `[:class:]`'s test; `[=c=]` and `[.c.]`
        are the character c."""
        kind = self.peek(1)
        if self.peek() != "[" or kind not in (":", "=", "."):
            c = self.peek()
            if not c:
                raise RegexError("brackets ([ ]) not balanced")
            self.pos += 1
            return c
        end = self.text.find(kind + "]", self.pos + 2)
        if end < 0:
            raise RegexError("brackets ([ ]) not balanced")
        name = self.text[self.pos + 2 : end]
        self.pos = end + 2
        if kind == ":":
            if name not in _CLASSES:
                raise RegexError("invalid character class")
            return _CLASSES[name]
        if len(name) != 1:
            raise RegexError("invalid collating element")
        return name


def _any(c: str) -> bool:
    return True


def _equal(expected: str) -> Callable[[str], bool]:
    return lambda c: c == expected


class _Builder:
    """Thompson's construction; a fragment is (start state, states whose next is unset)."""

    def __init__(self) -> None:
        self.states: list[list] = []

    def add(self, kind: int, a: object = None, b: object = None) -> int:
        if len(self.states) >= MAX_STATES:
            raise RegexError(f"the regex is too large: over {MAX_STATES} states")
        self.states.append([kind, a, b])
        return len(self.states) - 1

    def patch(self, holes: list[tuple[int, int]], target: int) -> None:
        for state, slot in holes:
            self.states[state][slot] = target

    def build(self, node: Node) -> tuple[int, list[tuple[int, int]]]:
        kind = node[0]
        if kind == "char":
            state = self.add(CHAR, node[1])
            return state, [(state, 2)]
        if kind in ("bol", "eol"):
            state = self.add(BOL if kind == "bol" else EOL)
            return state, [(state, 2)]
        if kind == "cat":
            start, holes = self.build(node[1][0])
            for part in node[1][1:]:
                next_start, next_holes = self.build(part)
                self.patch(holes, next_start)
                holes = next_holes
            return start, holes
        if kind == "alt":
            first, holes = self.build(node[1][0])
            for branch in node[1][1:]:
                other, other_holes = self.build(branch)
                first = self.add(SPLIT, first, other)
                holes = holes + other_holes
            return first, holes
        return self.repeat(node[1], node[2], node[3])

    def repeat(self, atom: Node, least: int, most: int | None) -> tuple[int, list[tuple[int, int]]]:
        """`least` copies, then `most - least` optional ones (or a loop when unbounded)."""
        start: int | None = None
        holes: list[tuple[int, int]] = []

        def append(fragment_start: int, fragment_holes: list[tuple[int, int]]) -> None:
            nonlocal start, holes
            if start is None:
                start = fragment_start
            else:
                self.patch(holes, fragment_start)
            holes = fragment_holes

        for _ in range(least):
            append(*self.build(atom))
        if most is None:
            body, body_holes = self.build(atom)
            loop = self.add(SPLIT, body, None)
            self.patch(body_holes, loop)
            append(loop, [(loop, 2)])
        else:
            skips: list[tuple[int, int]] = []
            for _ in range(most - least):
                body, body_holes = self.build(atom)
                split = self.add(SPLIT, body, None)
                append(split, body_holes)
                skips.append((split, 2))
            holes = holes + skips
        if start is None:  # `{0}` or `{0,0}`: matches the empty string
            empty = self.add(SPLIT, None, None)
            return empty, [(empty, 1), (empty, 2)]
        return start, holes


class Regex:
    """A compiled POSIX ERE; `search(text)` tells whether it matches anywhere in `text`."""

    def __init__(self, pattern: str) -> None:
        parser = _Parser(pattern)
        tree = parser.alternation() if pattern else ("cat", [])
        if parser.pos != len(pattern):  # only an unopened `)` stops the parse early
            raise RegexError("parentheses not balanced")
        builder = _Builder()
        if tree == ("cat", []):
            start = builder.add(MATCH)
        else:
            start, holes = builder.build(tree)
            builder.patch(holes, builder.add(MATCH))
        self.pattern = pattern
        self.states = [tuple(s) for s in builder.states]
        self.start = start
        self.steps = 0  # states visited by the last search: at most states x (len(text) + 1)

    def _closure(self, roots: list[int], at_start: bool, at_end: bool, into: set[int]) -> bool:
        """Add to `into` every state reachable from `roots` without reading a character (anchors
        pass where they hold); whether MATCH is among them."""
        states = self.states
        pending = [r for r in roots if r not in into]
        into.update(pending)
        matched = False
        while pending:
            self.steps += 1
            kind, a, b = states[pending.pop()]
            if kind == MATCH:
                matched = True
            elif kind == SPLIT:
                for following in (a, b):
                    if following is not None and following not in into:
                        into.add(following)
                        pending.append(following)
            elif (kind == BOL and at_start) or (kind == EOL and at_end):
                if b not in into:
                    into.add(b)
                    pending.append(b)
        return matched

    def search(self, text: str) -> bool:
        self.steps = 0
        current: set[int] = set()
        last = len(text)
        for index in range(last + 1):
            if self._closure([self.start], index == 0, index == last, current):
                return True
            if index == last:
                return False
            c = text[index]
            following: list[int] = []
            for state in current:
                kind, test, target = self.states[state]
                if kind == CHAR and test(c):
                    following.append(target)
            current = set()
            if self._closure(following, False, index + 1 == last, current):
                return True
        return False


def escape(text: str) -> str:
    """`text` as a pattern that matches it literally (llvm::Regex::escape)."""
    return "".join("\\" + c if c in "()^$|*+?.[]\\{}" else c for c in text)
