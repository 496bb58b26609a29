"""What comparisons, searches and hashing in tool code cost, paid before the C call runs.

The watchdog cannot stop one C call, so no C call may run long: a sort, min/max, a comparison, a
list search (`in`, count, index, remove) and a text search pay for the size of what they compare,
by `weight` (a long string compared many times costs as much as many strings), and refuse before
starting past the budget. Comparisons and `in` reach these through sandbox._ToolPolicy, which skips
the guard where one side is a literal (its size bounds the work).

Hashing a tuple recurses in C with no depth check (CPython 3.11's tuplehash: a tuple nested 200,000
deep ends the process), so every value tool code can make Python hash passes `key` first, which
refuses one nested past limits.MAX_DEPTH. Tool code reaches hashing only through:
  - set and dict displays and comprehensions (`{t}`, `{t: 1}`, `{*xs}`): sandbox._ToolPolicy wraps
    each element or key that is not a constant in `_key_`, and a `*xs` in `_keys_`;
  - subscripts (`d[t]`, `d[t] = 1`, `del d[t]`): a key that is not a constant is wrapped in `_key_`;
  - `in` / `not in`: `contains` checks the item when the container hashes it (dict, set, keys and
    items views);
  - the methods dict.get/pop/setdefault and set.add/discard: at a call site `d.get(k)` the policy
    wraps `k` in `_key_`, any other way to reach them (`f = d.get`) gets a checked method;
    dict.update, set.union/intersection/difference through `_consume`;
  - the builtins set() and dict(), and set operators on dict views (`d.keys() - xs`), through
    `keys`;
  - isinstance's second argument, looked up among the checked builtins;
  - the record API, which takes only plain values as keys and column names (records.RecordStore).
Nothing else tools can reach hashes a value they made (sets and dict views combine by the hashes
they hold); a deep list or dict is refused where it would be shown or returned (check_text_form,
the output check), and compared ones raise RecursionError, a fault.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .limits import MAX_DEPTH, MAX_SIZE, SIZE_PER_STEP, StepBudget, ToolSizeExceeded, nesting_depth, text_size

SMALL = 1_024                  # elements: C work over fewer is cheap enough not to weigh
_NUMBERS = frozenset({int, float, bool})
_CONTAINERS = frozenset({list, tuple, dict})
_COMPARED = frozenset({str, bytes, list, tuple, dict})  # a comparison of two of one of these can be long
_HASHED = frozenset({dict, set, frozenset, type({}.keys()), type({}.items())})  # `in` hashes the item
_VIEWS = frozenset({type({}.keys()), type({}.items())})  # set operators on these hash the other side's items


def weight(value: Any, limit: int = MAX_SIZE) -> int:
    """What comparing `value` with something may cost, in elements (a text's characters, a list's
    items and theirs...); counting stops past `limit`."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value) + 1
    if kind is int:
        return value.bit_length() // 64 + 1
    if kind in _NUMBERS or value is None:
        return 1
    return text_size(value, limit)


class CheckedWork:
    """Comparisons, searches and hashing for guards.Guards, each paid for or refused before it runs."""

    budget: StepBudget

    def _pay(self, elements: int) -> None:
        """Pay for C work over `elements` elements (a step per SIZE_PER_STEP)."""
        if elements > SIZE_PER_STEP:
            self.budget.charge(elements // SIZE_PER_STEP)

    def _limit(self) -> int:
        """How many elements the budget left can pay for: weighing stops past it."""
        return (max(self.budget.left, 0) + 1) * SIZE_PER_STEP

    # hashing -------------------------------------------------------------------------------
    def key(self, value: Any) -> Any:
        """`value`, which Python is about to hash: refused when tuples nest in it past MAX_DEPTH."""
        if type(value) is tuple:
            for item in value:
                if type(item) in _CONTAINERS:
                    self.budget.charge(len(value))
                    if nesting_depth(value) > MAX_DEPTH:
                        raise ToolSizeExceeded(f"tool tried to use a value nested more than {MAX_DEPTH} levels "
                                               "deep as a key")
                    break
        return value

    def keys(self, items: Iterable[Any]) -> Iterator[Any]:
        """`items`, each checked by `key` as it is taken (for `{*items}`, set(), dict.update...)."""
        key = self.key
        for item in items:
            yield key(item)

    # set operators on dict views ---------------------------------------------------------------
    def sub(self, a: Any, b: Any) -> Any:
        if type(a) in _VIEWS or type(b) in _VIEWS:  # `d.keys() - xs` hashes the items of xs
            return self._view_op(operator.sub, a, b)
        return a - b

    def or_(self, a: Any, b: Any) -> Any:
        if type(a) in _VIEWS or type(b) in _VIEWS:
            return self._view_op(operator.or_, a, b)
        return a | b

    def and_(self, a: Any, b: Any) -> Any:
        if type(a) in _VIEWS or type(b) in _VIEWS:
            return self._view_op(operator.and_, a, b)
        return a & b

    def xor(self, a: Any, b: Any) -> Any:
        if type(a) in _VIEWS or type(b) in _VIEWS:
            return self._view_op(operator.xor, a, b)
        return a ^ b

    def _view_op(self, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        a, b = (x if type(x) in _HASHED else list(self.keys(self.budget.iterate(x))) for x in (a, b))
        return op(a, b)

    # comparisons -----------------------------------------------------------------------------
    def _compared(self, a: Any, b: Any) -> None:
        """Pay for comparing two values of one kind that may be long (texts, lists, tuples, dicts):
        at most the lighter one's weight, in C."""
        if type(a) is str or type(a) is bytes:
            if len(a) > SMALL and len(b) > SMALL:
                self._pay(min(len(a), len(b)))
            return
        limit = self._limit()
        self._pay(min(weight(a, limit), weight(b, limit)))

    def eq(self, a: Any, b: Any) -> Any:
        if type(a) is type(b) and type(a) in _COMPARED:
            self._compared(a, b)
        return a == b

    def ne(self, a: Any, b: Any) -> Any:
        if type(a) is type(b) and type(a) in _COMPARED:
            self._compared(a, b)
        return a != b

    def lt(self, a: Any, b: Any) -> Any:
        if type(a) is type(b) and type(a) in _COMPARED:
            self._compared(a, b)
        return a < b

    def le(self, a: Any, b: Any) -> Any:
        if type(a) is type(b) and type(a) in _COMPARED:
            self._compared(a, b)
        return a <= b

    def gt(self, a: Any, b: Any) -> Any:
        if type(a) is type(b) and type(a) in _COMPARED:
            self._compared(a, b)
        return a > b

    def ge(self, a: Any, b: Any) -> Any:
        if type(a) is type(b) and type(a) in _COMPARED:
            self._compared(a, b)
        return a >= b

    def contains(self, item: Any, container: Any) -> bool:
        """`item in container`: the item checked where it is hashed, the search paid for where it
        compares (a list's items one by one, a text's characters)."""
        kind = type(container)
        if kind in _HASHED:
            self.key(item)
        elif kind is list or kind is tuple or kind is type({}.values()):
            if len(container) > SIZE_PER_STEP:  # each item compared costs at most the item's weight
                self._pay(len(container) * weight(item, self._limit()))
        elif kind is str or kind is bytes:
            if len(container) > SMALL:
                self._pay(len(container) + len(item) if type(item) is kind else len(container))
        elif kind is range and type(item) not in (int, bool):  # not an int: range searches item by item
            self.budget.charge(len(container))
        return item in container

    def not_in(self, item: Any, container: Any) -> bool:
        return not self.contains(item, container)

    def chain(self, left: Any, *rest: Any) -> Any:
        """`a < b <= c ...` as Python runs it (each operand once, stopping at the first false), each
        comparison checked: `rest` is (operator, function giving the next operand) pairs."""
        result: Any = True
        for i in range(0, len(rest), 2):
            right = rest[i + 1]()
            result = self._CHAIN[rest[i]](self, left, right)
            if not result:
                return result
            left = right
        return result

    _CHAIN = {"==": eq, "!=": ne, "<": lt, "<=": le, ">": gt, ">=": ge, "in": contains, "not in": not_in,
              "is": lambda self, a, b: a is b, "is not": lambda self, a, b: a is not b}

    def _ordered(self, items: list[Any], factor: int) -> None:
        """Pay for comparing `items` about `factor` times each (a sort: log2 of their number)."""
        if len(items) < 2:
            return
        if len(items) <= SIZE_PER_STEP:
            for item in items:
                if type(item) not in _NUMBERS:
                    break
            else:
                return  # a few numbers: nothing to weigh
        self._pay(text_size(items, self._limit() // factor + 1) * factor)

    def _keyed(self, key: Callable[[Any], Any], factor: int) -> Callable[[Any], Any]:
        """A sort or min/max key that pays for what its values will cost to compare."""
        def paid(item: Any) -> Any:
            value = key(item)
            if type(value) not in _NUMBERS:
                self._pay(weight(value, self._limit() // factor + 1) * factor)
            return value
        return paid

    # sorting and searching lists ---------------------------------------------------------------
    def sort(self, obj: list[Any], bound: Callable[..., None], key: Any, reverse: Any) -> None:
        """Sort `obj` in place, its comparisons paid for: each item takes part in about log2(n)."""
        factor = max(len(obj).bit_length(), 1)
        if key is None:
            self._ordered(obj, factor)
            return bound(reverse=reverse)
        return bound(key=self._keyed(key, factor), reverse=reverse)

    def search_list(self, obj: list[Any], bound: Callable[..., Any], value: Any, *args: Any) -> Any:
        """list.count / index / remove: each item compared costs at most the weight of `value`."""
        if len(obj) > SIZE_PER_STEP:
            self._pay(len(obj) * weight(value, self._limit()))
        return bound(value, *args)
