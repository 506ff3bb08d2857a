"""What recording costs in money: the user's prices, never a built-in list.

Prices go stale, so citecheck ships none. The user sets the price of one
Crawling API credit and, per judge model, of a million input and output tokens::

    citecheck_price_credit = 0.001
    citecheck_prices = openai:gpt-4o-mini=0.15/0.60 anthropic:claude-sonnet-4-6=3/15

(flags ``--citecheck-price-credit`` / ``--citecheck-prices``; the batch's
``--price-credit`` / ``--prices``). Amounts have no currency: they are in
whatever unit the prices are. Without prices, reports show credits and tokens
only and a ``max cost`` budget cannot be checked.

Pure: no imports beyond the standard library, so the option parser can use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PER_TOKENS = 1_000_000  # judge prices are per million tokens
# What a judge call answered through the provider's batch API costs against the
# synchronous price: OpenAI's Batch API and Anthropic's Message Batches both bill half.
BATCH_PRICE_FACTOR = 0.5

_ENTRY = re.compile(
    r"^(?P<spec>[A-Za-z][A-Za-z0-9_-]*:\S+?)=(?P<input>[0-9.eE+-]+)/(?P<output>[0-9.eE+-]+)$"
)
PRICES_EXAMPLE = "openai:gpt-4o-mini=0.15/0.60"


class PriceError(ValueError):
    """A price that cannot be read; the message says what is wrong and the form expected."""


@dataclass(frozen=True)
class TokenPrice:
    """The price of a million input and of a million output tokens of one judge model."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int, batch: bool = False) -> float:
        """The price of these tokens; ``batch``: answered through the batch API."""
        factor = BATCH_PRICE_FACTOR if batch else 1.0
        return factor * (input_tokens * self.input + output_tokens * self.output) / PER_TOKENS


@dataclass(frozen=True)
class Prices:
    """The user's prices: ``credit`` per Crawling API credit, ``judges`` per model spec."""

    credit: float | None = None
    judges: Mapping[str, TokenPrice] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return self.credit is not None or bool(self.judges)

    def judge(self, spec: str | None) -> TokenPrice | None:
        """The price of the judge ``spec`` (``provider:model``, provider case-insensitive)."""
        if spec is None:
            return None
        return self.judges.get(_key(spec))

    def missing(
        self,
        credits: float,
        judges: Iterable[str],
        name: Callable[[str], str] = lambda option: option,
    ) -> list[str]:
        """What a money figure for this spend would lack: the credit price when
        credits are spent, and each judge that has no price. ``name`` spells the
        options ``price_credit`` and ``prices`` (a front end's ``Terms.option``)."""
        out = []
        if credits and self.credit is None:
            out.append(f"the price of a Crawling API credit ({name('price_credit')})")
        for spec in sorted(set(judges)):
            if self.judge(spec) is None:
                out.append(f"the token prices of {spec} ({name('prices')})")
        return out

    def cost(
        self,
        credits: float,
        tokens: Mapping[str, tuple[int, int]],
        batch_tokens: Mapping[str, tuple[int, int]] | None = None,
    ) -> float | None:
        """Money for ``credits`` and, per judge spec, ``(input, output)`` tokens (of
        which ``batch_tokens`` were answered through the batch API, at its price);
        None when a price it needs is not set."""
        if self.missing(credits, [s for s, (i, o) in tokens.items() if i or o]):
            return None
        batched = batch_tokens or {}
        total = credits * (self.credit or 0.0)
        for spec, (input_tokens, output_tokens) in tokens.items():
            price = self.judge(spec)
            if price is not None:
                total += self.judge_cost(
                    price, (input_tokens, output_tokens), batched.get(spec, (0, 0))
                )
        return total

    @staticmethod
    def judge_cost(
        price: TokenPrice, tokens: tuple[int, int], batch: tuple[int, int] = (0, 0)
    ) -> float:
        """One judge's ``tokens``, of which ``batch`` were answered by the batch API."""
        sync = (tokens[0] - batch[0], tokens[1] - batch[1])
        return price.cost(*sync) + price.cost(*batch, batch=True)


def _key(spec: str) -> str:
    provider, _, model = spec.strip().partition(":")
    return f"{provider.lower()}:{model}"


def parse_amount(text: str, what: str = "price") -> float:
    """A non-negative number (a price or a budget)."""
    try:
        value = float(text)
    except ValueError:
        raise PriceError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise PriceError(f"{text!r} is not a {what} (a number >= 0)")
    return value


def parse_judge_prices(text: str) -> dict[str, TokenPrice]:
    """``provider:model=IN/OUT`` entries (per million tokens), separated by spaces,
    commas or lines."""
    prices: dict[str, TokenPrice] = {}
    for entry in re.split(r"[\s,]+", text.strip()):
        if not entry:
            continue
        match = _ENTRY.match(entry)
        if match is None:
            raise PriceError(
                f"{entry!r} is not PROVIDER:MODEL=INPUT/OUTPUT (prices per million tokens, "
                f"e.g. {PRICES_EXAMPLE})"
            )
        spec = _key(match["spec"])
        if spec in prices:
            raise PriceError(f"{match['spec']} has two prices; give each judge one")
        prices[spec] = TokenPrice(parse_amount(match["input"]), parse_amount(match["output"]))
    return prices


def money(amount: float) -> str:
    """An amount as reports print it: 4 significant digits, no currency."""
    return f"{amount:.4g}" if amount < 1000 else f"{amount:,.2f}"


def spend_text(spend: Mapping[str, Any] | None) -> str:
    """``, cost 0.0123`` for the terminal and markdown (empty without prices)."""
    if spend is None:
        return ""
    if spend["cost"] is None:
        return f"; cost unknown: set {' and '.join(spend['missing'])}"
    calls = spend.get("batch_calls") or 0
    batch = (
        f" ({calls} judge call{'' if calls == 1 else 's'} through the batch API, at its price: "
        f"{BATCH_PRICE_FACTOR:g} of the synchronous one)"
        if calls
        else ""
    )
    return f", cost {money(spend['cost'])}{batch}"
