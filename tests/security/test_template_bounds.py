"""Jinja in domain.yaml is bounded (red-team 2026-12-06 R6, issue 38 item 3): on 7043c43 `{{ 'a' * 10**10 }}`
asked for 10 GB, two nested `range(100000)` loops and `{{ pick('ab' * 10**9) }}` hung populate (killed at
45 s). Every template now renders in a sandbox whose repetition, powers, concatenation, growing filters and
methods, loop steps, time and output are bounded (domains/template_limits.py): each payload fails within a
second as a one-line PopulateError naming the column, whatever Jinja construct carries it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from toolscale.domains.domain import parse_spec
from toolscale.pipeline.populate import PopulateError, populate
from toolscale.pipeline.templating import TemplateError, evaluate, random_helpers, render_text

LIBRARY = (Path(__file__).resolve().parents[1] / "fixtures" / "library" / "domain.yaml").read_text()
FAST_S = 3.0

PAYLOADS = {
    # R6's three, as reported
    "r6-repeat-10-gb": "{{ 'a' * 10**10 }}",
    "r6-nested-range-loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
    "r6-pick-of-2-gb": "{{ pick('ab' * 10**9) }}",
    # the same work through every other door
    "repeat-reversed": "{{ 10**10 * 'a' }}",
    "repeat-a-list": "{{ ([1, 2] * 10**9)|length }}",
    "repeat-a-list-of-big-strings": "{{ (['a' * 90000] * 100)|length }}",
    "repeat-a-tuple": "{{ ((1,) * 10**9)|length }}",
    "huge-power": "{{ 7 ** (10**8) }}",
    "huge-power-of-a-huge-base": "{{ (2 ** 4000) ** 2 }}",
    "huge-product": "{{ (2 ** 4000) * (2 ** 4000) }}",
    "string-doubling-by-plus": "{% set a = 'a' * 99999 %}{{ a + a }}",
    "list-doubling-by-plus": "{% set a = ['a'] * 99999 %}{{ (a + a)|length }}",
    "string-doubling-by-tilde": "{% set a = 'a' * 60000 %}{{ a ~ a }}",
    "percent-width": "{{ '%0999999999d' % 1 }}",
    "percent-star-width": "{{ '%*d' % (999999999, 1) }}",
    "percent-precision": "{{ '%.999999999f' % 1.5 }}",
    "format-filter-width": "{{ '%0999999999d'|format(1) }}",
    "str-format-width": "{{ '{:>999999999}'.format(1) }}",
    "str-format-map-width": "{{ '{x:>999999999}'.format_map({'x': 1}) }}",
    "center-filter": "{{ 'a'|center(10**10) }}",
    "indent-filter": "{{ ('a\\n' * 50000)|indent(100000) }}",
    "replace-filter": "{% set x = 'a' * 60000 %}{{ x|replace('a', x) }}",
    "replace-empty-needle": "{{ ('a' * 60000)|replace('', 'bb') }}",
    "wordwrap-filter": "{{ 'a b'|wordwrap(10**10) }}",
    "batch-filter": "{{ [1]|batch(10**9, 'x')|list }}",
    "join-filter": "{{ (range(100000)|map('string')|list * 1)|join('x' * 50) }}",
    "ljust-method": "{{ 'a'.ljust(10**10) }}",
    "rjust-method": "{{ 'a'.rjust(10**10) }}",
    "center-method": "{{ 'a'.center(10**10) }}",
    "zfill-method": "{{ '1'.zfill(10**10) }}",
    "expandtabs-method": "{{ ('\\t' * 1000).expandtabs(10**6) }}",
    "replace-method": "{% set x = 'a' * 60000 %}{{ x.replace('a', x) }}",
    "join-method": "{{ ('x' * 1000).join(['a' * 1000] * 99) }}",
    "loop-over-a-long-string": "{% for c in 'a' * 99999 %}{% for d in 'b' * 99999 %}{% endfor %}{% endfor %}",
    "three-nested-loops": "{% for i in range(100) %}{% for j in range(100) %}{% for k in range(100) %}"
                          "{% endfor %}{% endfor %}{% endfor %}",
    "loop-with-filters": "{% for i in range(100000)|list %}{% for j in range(100000)|list %}{% endfor %}{% endfor %}",
    "recursive-loop": "{% for x in range(10) recursive %}{{ loop(range(10)) }}{% endfor %}",
    "range-past-the-sandbox-cap": "{{ range(10**9)|length }}",
    "append-doubling": "{% set x = [1] %}{% for i in range(60) %}{{ x.extend(x) }}{% endfor %}",
    "dict-update-growth": "{% set d = {} %}{{ d.update({'a': 1}) }}",
    "output-past-the-cap": "{% for i in range(200) %}{{ 'a' * 1000 }}{% endfor %}",
    "pick-of-a-huge-range": "{{ pick(range(10**9)) }}",
}


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_template_payload_fails_fast_in_one_line(payload):
    import random

    context = random_helpers(random.Random(0))
    start = time.monotonic()
    with pytest.raises(TemplateError) as caught:
        render_text(PAYLOADS[payload], context)
    assert time.monotonic() - start < FAST_S
    message = str(caught.value)
    assert "\n" not in message and len(message) < 600, message


@pytest.mark.parametrize("payload", ["r6-repeat-10-gb", "r6-nested-range-loops", "r6-pick-of-2-gb", "huge-power",
                                     "str-format-width", "loop-over-a-long-string"])
def test_r6_through_populate_is_a_one_line_populate_error_naming_the_column(payload):
    """R6's domain: the payload as a `gen: {template: ...}` of one column, through populate."""
    template = PAYLOADS[payload].replace('"', '\\"')
    spec = parse_spec(LIBRARY.replace('gen: {template: "member{{ seq }}@library.test"}',
                                      f'gen: {{template: "{template}"}}'))
    start = time.monotonic()
    with pytest.raises(PopulateError) as caught:
        populate(spec, seed=0)
    assert time.monotonic() - start < FAST_S * 3
    message = str(caught.value)
    assert message.startswith("members.email: ") and "\n" not in message and len(message) < 800, message


@pytest.mark.parametrize("expression", ["'a' * 10**10", "10 ** (10**10)", "'x'.ljust(10**10)", "[0] * 10**10",
                                        "range(10**9)|list|length"])
def test_a_bare_expression_is_bounded_too(expression):
    start = time.monotonic()
    with pytest.raises(TemplateError):
        evaluate(expression, {})
    assert time.monotonic() - start < FAST_S


@pytest.mark.parametrize(("source", "expected"), [
    ("{{ '%02d'|format(7) }}", "07"), ("{{ 'ab' * 3 }}", "ababab"), ("{{ 2 ** 10 }}", "1024"),
    ("{% for i in range(3) %}{{ i }}{% endfor %}", "012"), ("{{ ['a', 'b']|join('-') }}", "a-b"),
    ("{{ 'x'|center(5) }}", "  x  "), ("{{ 'a-b'|replace('-', '+') }}", "a+b"), ("{{ 'a' ~ 1 ~ 'b' }}", "a1b"),
    ("{{ '{}:{}'.format(1, 2) }}", "1:2"), ("{{ '7'.zfill(3) }}", "007"),
    ("{{ range(3)|map('string')|join(',') }}", "0,1,2"),  # an iterator joined once, not read empty
])
def test_what_the_domains_write_still_renders(source, expected):
    assert render_text(source, {}) == expected
