"""A fast LALR loop for the SIR grammar: Lark's LALR parser and contextual lexer, run from Lark's own tables,
scanners and rule callbacks in one loop (the parser's hot path; `parser` falls back to Lark on any error)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import lark
from lark import Token
from lark.parse_tree_builder import ExpandSingleChild
from lark.parsers.lalr_analysis import Shift


class Fallback(Exception):
    """The fast path met input that does not lex or parse: rerun Lark for the exact error."""


_Callback = Callable[[list[Any]], Any]
# A reduction: how many values it takes off the stack, the rule's callback (None for a unit rule that passes its
# only child through) and the nonterminal it produces. An action is (next state, None) for a shift and
# (None, reduction) for a reduction.
_Reduction = tuple[int, _Callback | None, str]
_Action = tuple[int | None, _Reduction | None]
_NO_ACTION: _Action = (None, None)


def _reduction(rule: Any, callback: _Callback) -> _Reduction:
    count = len(rule.expansion)
    if count == 1 and type(callback) is ExpandSingleChild:
        # Lark's `ExpandSingleChild` returns a single child as it is (`?expr: or_expr`): skip the call.
        return count, None, rule.origin.name
    return count, callback, rule.origin.name


class StateLexer:
    """What Lark's contextual lexer uses in one parser state: its scanner's regexes (tried in order, the first
    match wins), the ignored terminals, those that may hold newlines, and the token callbacks (a keyword
    matched by NAME gets its own type)."""

    __slots__ = ("callbacks", "ignore", "newlines", "regexes")

    def __init__(self, basic_lexer: Any) -> None:
        scanner = basic_lexer.scanner  # built on first use; this also fills in `basic_lexer.callback`
        self.regexes: list[re.Pattern[str]] = list(scanner._mres)
        self.ignore: frozenset[str] = basic_lexer.ignore_types
        self.newlines: frozenset[str] = basic_lexer.newline_types
        self.callbacks: dict[str, Callable[[Token], Token]] = basic_lexer.callback


class FastLALR:
    """Lark's LALR parser and contextual lexer, run from Lark's own tables, scanners and rule callbacks in one
    loop.

    `lark.Lark.parse` spends most of its time between the steps: a generator and four calls per token, a
    line counter object, `Rule` objects hashed in Python at every reduction. This loop takes the same steps
    in the same order, so it builds the same IR. It reports no errors itself: on input that it cannot lex or
    parse it raises `Fallback`, and the caller reruns `lark.Lark.parse`, whose exception is the one reported.
    """

    def __init__(self, frontend: Any, start: str) -> None:
        parser = frontend.parser.parser
        table, callbacks = parser.parse_table, parser.callbacks
        self.start_state: int = table.start_states[start]
        self.end_state: int = table.end_states[start]
        self.actions: dict[int, dict[str, _Action]] = {
            state: {
                term: (arg, None) if action is Shift else (None, _reduction(arg, callbacks[arg]))
                for term, (action, arg) in actions.items()
            }
            for state, actions in table.states.items()
        }
        # Transformer methods named after a terminal run when a token of it is shifted.
        self.shift_callbacks: dict[str, Callable[[Token], Any]] = {
            k: v for k, v in callbacks.items() if isinstance(k, str)}
        self.basic_lexers: dict[int, Any] = frontend.lexer.lexers
        self.lexers: dict[int, StateLexer] = {}  # filled on first use, as Lark builds its scanners
        # (state below, state, lookahead) -> the state after every unit reduction that follows there
        self.unit_chains: dict[tuple[int, int, str], int] = {}

    @classmethod
    def create(cls, parser: lark.Lark, start: str) -> FastLALR | None:
        """The fast path, or None where this Lark's internals differ from those it was written against."""
        try:
            fast = cls(parser.parser, start)
            fast._lexer(fast.start_state)
        except (AttributeError, KeyError, TypeError):
            return None
        return fast

    def _unit_chain(self, below: int, state: int, kind: str) -> int:
        """Where a run of unit reductions (`?expr: or_expr` down to an atom) ends on the lookahead `kind`: each
        pops the top state and goes from `below` by the rule's nonterminal, so the run depends on these
        three alone. Taken once per triple instead of one step per rule (most reductions are unit ones)."""
        first = state
        while True:
            target, reduction = self.actions[state].get(kind, _NO_ACTION)
            if target is not None or reduction is None or reduction[1] is not None:
                break
            goto = self.actions[below][reduction[2]][0]
            assert goto is not None
            state = goto
        self.unit_chains[(below, first, kind)] = state
        return state

    def _lexer(self, state: int) -> StateLexer:
        lexer = self.lexers[state] = StateLexer(self.basic_lexers[state])
        return lexer

    def parse(self, text: str) -> Any:
        actions, lexers, shift_callbacks, end_state = self.actions, self.lexers, self.shift_callbacks, self.end_state
        unit_chains = self.unit_chains
        new_str = str.__new__
        states: list[int] = [self.start_state]
        values: list[Any] = []
        pos, line, line_start, size = 0, 1, 0, len(text)
        token: Token | None = None
        while True:
            # ---- the next token, lexed with the terminals that the current parser state accepts
            if pos < size:
                lexer = lexers.get(states[-1]) or self._lexer(states[-1])
                for regex in lexer.regexes:
                    match = regex.match(text, pos)
                    if match is not None:
                        break
                else:
                    raise Fallback
                value, kind = match.group(), match.lastgroup
                start, start_line, start_col = pos, line, pos - line_start + 1
                pos += len(value)
                if kind in lexer.newlines:
                    newlines = value.count("\n")
                    if newlines:
                        line += newlines
                        line_start = start + value.rindex("\n") + 1
                if kind in lexer.ignore:
                    continue
                # Token(kind, value, ...) as Lark's own constructor makes it, without its two calls per token
                token = new_str(Token, value)
                token.type, token.value, token.start_pos, token.end_pos = kind, value, start, pos
                token.line, token.column, token.end_line, token.end_column = (start_line, start_col, line,
                                                                              pos - line_start + 1)
                if kind in lexer.callbacks:
                    token = lexer.callbacks[kind](token)
                    kind = token.type
                at_end = False
            else:
                kind, at_end = "$END", True
            # ---- reduce while the table says so, then shift the token (at the end: until the start rule)
            while True:
                target, reduction = actions[states[-1]].get(kind, _NO_ACTION)
                if target is not None and not at_end:
                    states.append(target)
                    values.append(shift_callbacks[kind](token) if kind in shift_callbacks else token)
                    break
                if reduction is None:
                    raise Fallback
                count, callback, origin = reduction
                if callback is None and not at_end:  # unit rules: the value stack stays, the top state changes
                    after = unit_chains.get((states[-2], states[-1], kind))
                    states[-1] = self._unit_chain(states[-2], states[-1], kind) if after is None else after
                    continue
                if callback is None:  # a unit rule: its only child stays on the value stack
                    del states[-1]
                else:
                    if count:
                        children = values[-count:]
                        del states[-count:]
                        del values[-count:]
                    else:
                        children = []
                    values.append(callback(children))
                goto = actions[states[-1]][origin][0]
                assert goto is not None
                states.append(goto)
                if at_end and goto == end_state:
                    return values[-1]
