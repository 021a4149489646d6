"""CEL's tokens, cut as cel-go's ANTLR lexer cuts them (``parser/gen/CEL.g4``): the longest token wins, a
token that breaks off falls back to its longest complete prefix (``b"\\s"`` is the identifier ``b`` and then a
broken string), and text that starts no token is one ``token recognition error`` spanning from where the
token began to the character that broke it, after which lexing resumes past that character.

Token kinds are ANTLR's token types, so sets of them sort the way ANTLR prints "expecting {...}".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EOF = -1
EQUALS, NOT_EQUALS, IN, LESS, LESS_EQUALS, GREATER_EQUALS, GREATER = 1, 2, 3, 4, 5, 6, 7
LOGICAL_AND, LOGICAL_OR, LBRACKET, RBRACKET, LBRACE, RBRACE, LPAREN, RPAREN = 8, 9, 10, 11, 12, 13, 14, 15
DOT, COMMA, MINUS, EXCLAM, QUESTION, COLON, PLUS, STAR, SLASH, PERCENT = 16, 17, 18, 19, 20, 21, 22, 23, 24, 25
TRUE, FALSE, NULL = 26, 27, 28
NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER, ESC_IDENTIFIER = 31, 32, 33, 34, 35, 36, 37

DISPLAY = {
    EOF: "<EOF>", EQUALS: "'=='", NOT_EQUALS: "'!='", IN: "'in'", LESS: "'<'", LESS_EQUALS: "'<='",
    GREATER_EQUALS: "'>='", GREATER: "'>'", LOGICAL_AND: "'&&'", LOGICAL_OR: "'||'", LBRACKET: "'['",
    RBRACKET: "']'", LBRACE: "'{'", RBRACE: "'}'", LPAREN: "'('", RPAREN: "')'", DOT: "'.'", COMMA: "','",
    MINUS: "'-'", EXCLAM: "'!'", QUESTION: "'?'", COLON: "':'", PLUS: "'+'", STAR: "'*'", SLASH: "'/'",
    PERCENT: "'%'", TRUE: "'true'", FALSE: "'false'", NULL: "'null'", NUM_FLOAT: "NUM_FLOAT",
    NUM_INT: "NUM_INT", NUM_UINT: "NUM_UINT", STRING: "STRING", BYTES: "BYTES", IDENTIFIER: "IDENTIFIER",
    ESC_IDENTIFIER: "ESC_IDENTIFIER",
}
"""How ANTLR names each kind in "expecting ..." (its literal name if it has one, else its symbolic one)."""

_WORDS = {"in": IN, "true": TRUE, "false": FALSE, "null": NULL}
_PUNCTUATION = {
    "==": EQUALS, "!=": NOT_EQUALS, "<": LESS, "<=": LESS_EQUALS, ">=": GREATER_EQUALS, ">": GREATER,
    "&&": LOGICAL_AND, "||": LOGICAL_OR, "[": LBRACKET, "]": RBRACKET, "{": LBRACE, "}": RBRACE, "(": LPAREN,
    ")": RPAREN, ".": DOT, ",": COMMA, "-": MINUS, "!": EXCLAM, "?": QUESTION, ":": COLON, "+": PLUS,
    "*": STAR, "/": SLASH, "%": PERCENT,
}

_ESC = r"""\\(?:[abfnrtv"'\\?`]|[xX][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-3][0-7]{2})"""
# Each alternative is tried before any shorter one that could match at the same place, so the first match
# is ANTLR's longest match (a triple-quoted string before the empty string its first two quotes make).
_STRING_BODY = (
    rf'"""(?:{_ESC}|[^\\])*?"""' rf"|'''(?:{_ESC}|[^\\])*?'''"
    rf'|"(?:{_ESC}|[^\\"\n\r])*"' rf"|'(?:{_ESC}|[^\\'\n\r])*'"
)
_RAW_BODY = r'"""[\s\S]*?"""' r"|'''[\s\S]*?'''" r'|"[^"\n\r]*"' r"|'[^'\n\r]*'"
# One match: any whitespace and comments, then one token (or the end of the text). Identifiers and
# operators come first because they are most tokens; a word that prefixes a string (``b'``, ``r"``) is left
# to the string alternatives, and is an identifier only if no string follows (ANTLR's fallback).
_TOKEN = re.compile(
    r"(?:[\t\n\f\r ]+|//[^\n]*)*"
    r"(?:(?P<id>(?![bB]?[rR]?[\"'])[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[<>\[\]{}(),\-!?:+*/%]|\.(?![0-9]))"
    r"|(?P<num>0x[0-9a-fA-F]+[uU]?|[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+|[uU])?"
    r"|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
    rf"|(?P<str>[bB]?(?:[rR](?:{_RAW_BODY})|(?:{_STRING_BODY})))"
    r"|(?P<esc>`[A-Za-z0-9_./ -]+`)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<end>\Z))"
)
_SPACE = re.compile(r"(?:[\t\n\f\r ]+|//[^\n]*)+")
_ESC_CHECK = re.compile(_ESC)
_ESC_IDENT_CHAR = re.compile(r"[A-Za-z0-9_./ -]")


@dataclass(frozen=True, slots=True)
class LexError:
    offset: int
    text: str
    """From where the token began through the character that broke it (ANTLR's error text)."""


@dataclass(slots=True)
class Tokens:
    """Parallel lists (kinds, start offsets, texts), ending with an EOF token at the end of the text."""

    kinds: list[int]
    starts: list[int]
    texts: list[str]
    error: LexError | None
    """The first token recognition error, if any (the tokens around it are still cut, as ANTLR goes on)."""


def tokenize(text: str) -> Tokens:
    kinds: list[int] = []
    starts: list[int] = []
    texts: list[str] = []
    error: LexError | None = None
    add_kind, add_start, add_text = kinds.append, starts.append, texts.append
    words, punctuation = _WORDS, _PUNCTUATION
    index, end = 0, len(text)
    while True:
        # Runs of matches join up until text that starts no token; lexing resumes past where it broke.
        for found in _TOKEN.finditer(text, index):
            if found.start() != index:
                break
            group = found.lastgroup
            if group == "end":
                kinds.append(EOF)
                starts.append(end)
                texts.append("")
                return Tokens(kinds, starts, texts, error)
            start, index = found.span(group)  # type: ignore[arg-type]
            token = text[start:index]
            add_start(start)
            add_text(token)
            if group in ("id", "word"):
                add_kind(words.get(token, IDENTIFIER))
            elif group == "op":
                add_kind(punctuation[token])
            elif group == "num":
                add_kind(NUM_UINT if token[-1] in "uU" else NUM_INT if token.startswith("0x") or not (
                    "." in token or "e" in token or "E" in token) else NUM_FLOAT)
            elif group == "str":
                add_kind(BYTES if token[0] in "bB" else STRING)
            else:
                add_kind(ESC_IDENTIFIER)
        start = _skip_space(text, index)
        broke = _broken_at(text, start)
        if error is None:
            error = LexError(start, text[start:broke + 1])
        index = min(broke + 1, end)


def _skip_space(text: str, index: int) -> int:
    found = _SPACE.match(text, index)
    return found.end() if found else index


def _broken_at(text: str, start: int) -> int:
    """The offset of the character at which every token that could begin at ``start`` breaks off (the
    length of the text when it is the end). Only called where no token matches at all."""
    char = text[start]
    if char in "=&|":
        return start + 1  # '==', '&&', '||' without their second character
    if char in "\"'":
        return _string_broken_at(text, start)
    if char == "`":
        index = start + 1
        while index < len(text) and _ESC_IDENT_CHAR.match(text, index):
            index += 1
        return index  # a character outside the set, the closing '`' of an empty name, or the end
    return start


def _string_broken_at(text: str, start: int) -> int:
    """Where a single-quoted string that does not close breaks: at a newline, a backslash that starts no
    escape (the character that spoils it), or the end. (A triple quote would have matched the empty
    string its first two quotes make, so only single-quoted strings get here.)"""
    quote = text[start]
    index, end = start + 1, len(text)
    while index < end:
        char = text[index]
        if char == quote or char in "\n\r":
            return index
        if char == "\\":
            escape = _ESC_CHECK.match(text, index)
            if escape is None:
                return _escape_broken_at(text, index)
            index = escape.end()
        else:
            index += 1
    return end


def _escape_broken_at(text: str, index: int) -> int:
    """The first character after the backslash at ``index`` that no escape sequence allows."""
    end = len(text)
    nxt = index + 1
    if nxt >= end:
        return end
    char = text[nxt]
    if char in "xXuU":
        want = {"x": 2, "X": 2, "u": 4, "U": 8}[char]
        for offset in range(nxt + 1, nxt + 1 + want):
            if offset >= end or text[offset] not in "0123456789abcdefABCDEF":
                return min(offset, end)
        return nxt + 1 + want
    if char in "0123":
        for offset in (nxt + 1, nxt + 2):
            if offset >= end or text[offset] not in "01234567":
                return min(offset, end)
    return nxt
