"""The start-up check: every key and token the claims will need, once, before any runs.

The judges they use (``settings.judge``, else each claim's ``judge``, else
:data:`~pytest_citecheck.core.defaults.DEFAULT_JUDGE`; a panel's members), the
Crawlbase token when URL citations will be recorded, the built-in ranker's packages
when pages will be ranked, the prices that ``max_cost`` counts in, and the
cassette folders recording saves into (:func:`cassette_folder_problems`). A problem
found here costs nothing; found after the first page is fetched, it is billed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import DEFAULT_JUDGE, MIN_CASSETTE_FREE_BYTES
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.files import folder_problem
from pytest_citecheck.core.providers import TOKEN_ENV
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, Terms
from pytest_citecheck.engine.stage_builder import StageBuilder

# The token that recording URL citations needs.
CRAWLBASE_TOKEN_ENV = TOKEN_ENV["normal"]


def preflight(
    stages: StageBuilder,
    claims: Iterable[Claim],
    will_record: Callable[[Claim], bool],
    cassette_for: Callable[[Claim], Path | None] | None = None,
) -> None:
    """Raise :class:`ConfigurationError` listing each problem: the variable to set
    (never its value) and, when the judge came from ini, the option.
    ``will_record(claim)``: the claim may go to the network; ``cassette_for(claim)``:
    where it records (its folder is checked when it will record)."""
    from pytest_citecheck.engine.pipeline import asks_judge, ranks_passages

    settings = stages.settings
    terms = settings.terms
    problems: list[str] = []
    needs: dict[str, bool] = {}  # judge spec -> will record
    named: set[str] = set()  # the specs a claim file's judge: or judges: chose
    crawls = ranks = False
    folders: list[Path] = []
    for claim in claims:
        if not claim.citations:
            continue
        records = will_record(claim)
        cassette = cassette_for(claim) if records and cassette_for is not None else None
        if cassette is not None:
            folders.append(cassette.parent)
        judged = records and any(asks_judge(c) for c in claim.citations)
        for spec in settings.specs_for(claim):
            needs[spec] = needs.get(spec, False) or judged
        if settings.judge is None and not settings.judges:
            named.update(claim.judges or ((claim.judge,) if claim.judge else ()))
        crawls = crawls or (records and any(c.url for c in claim.citations))
        ranks = ranks or (records and any(ranks_passages(c) for c in claim.citations))
    for spec, records in needs.items():
        problem = _judge_problem(stages, spec, records, spec in named)
        if problem:
            problems.append(problem)
    if crawls and not stages.environ.get(CRAWLBASE_TOKEN_ENV) and not stages.custom_fetcher:
        problems.append(
            f"{CRAWLBASE_TOKEN_ENV} is not set: URL citations not yet recorded are fetched "
            f"through the Crawling API; set {CRAWLBASE_TOKEN_ENV} to your Crawlbase Normal token"
            f"{terms.replay_hint()}"
        )
    problems += _token_problems(
        stages,
        crawls and not stages.custom_fetcher,
        [spec for spec, records in needs.items() if records and stages.is_builtin_judge(spec)],
    )
    if ranks:
        problem = _ranker_problem(stages)
        if problem:
            problems.append(problem)
    if settings.max_cost is not None:
        missing = settings.prices.missing(
            1.0 if crawls else 0.0,
            [stages.judge_name(s) for s, records in needs.items() if records],
            terms.option,
        )
        if missing:
            problems.append(
                f"{terms.option('max_cost')} needs {' and '.join(missing)} to count the "
                "spend in money"
            )
    problems += cassette_folder_problems(folders, terms)
    if problems:
        raise ConfigurationError("\n".join(f"  - {p}" for p in problems))


def cassette_folder_problems(folders: Iterable[Path], terms: Terms) -> list[str]:
    """Each cassette folder a recording would fail to save into, once: missing and
    not creatable, not writable, or with less than
    :data:`~pytest_citecheck.core.defaults.MIN_CASSETTE_FREE_BYTES` free. Probed with
    a file created and removed (nothing else is written): found after the pages were
    fetched and judged, the run would be paid for and lost."""
    problems: list[str] = []
    probed: set[Path] = set()
    for folder in dict.fromkeys(folders):
        # Folders not yet created share the probe of the one above them.
        problem = folder_problem(folder, MIN_CASSETTE_FREE_BYTES)
        if problem is None or problem.where in probed:
            continue
        probed.add(problem.where)
        named = f"cassettes cannot be saved into {terms.cassette_name(folder)}: it"
        if problem.where != folder:
            named += f" would be created in {terms.cassette_name(problem.where)}, which"
        other = (
            f", or record into another folder with {terms.options['cassettes']}"
            if "cassettes" in terms.options
            else ""
        )
        problems.append(f"{named} {problem.cause}; {problem.fix}{other}{terms.replay_hint()}")
    return problems


def _token_problems(stages: StageBuilder, crawls: bool, judges: Iterable[str]) -> list[str]:
    """Tokens and keys a recording would use that it could not tell apart or keep
    out of its files: one shorter than a real one (a placeholder such as ``anything``;
    recordings remove secrets by value) or two variables with the same value (a
    recording names a Crawlbase token by its kind, found by its value). Named by
    variable, never by value."""
    from pytest_citecheck.core.providers import PROVIDER_ENV
    from pytest_citecheck.core.secrets import MIN_TOKEN_CHARS
    from pytest_citecheck.stages.judges import parse_judge_spec

    env = stages.environ
    used: dict[str, bool] = {}  # variable -> a real one is at least MIN_TOKEN_CHARS long
    if crawls:
        used |= {name: True for name in TOKEN_ENV.values()}
    for spec in judges:
        key = PROVIDER_ENV[parse_judge_spec(spec)[0]]
        # A local server's optional key is whatever its operator chose.
        used[key.key_env] = used.get(key.key_env, False) or key.key_required
    present = {name: env[name] for name in used if env.get(name)}
    problems = [
        f"{name} is {len(value)} characters long; a real token or API key has at least "
        f"{MIN_TOKEN_CHARS} (a placeholder?): recordings remove it from what they save by its "
        f"value, so a short one would be cut out of page and prompt text. Set {name} to the "
        "real value"
        for name, value in present.items()
        if used[name] and len(value) < MIN_TOKEN_CHARS
    ]
    by_value: dict[str, list[str]] = {}
    for name, value in present.items():
        by_value.setdefault(value, []).append(name)
    for names in by_value.values():
        if len(names) > 1:
            problems.append(
                f"{' and '.join(names)} hold the same value: each must be its own token or key "
                "(the Crawlbase Normal and JavaScript tokens differ, and a recording tells "
                "them apart by value)"
            )
    return problems


def recording_needs(judges: Iterable[str], urls: bool) -> str:
    """What recording asks of the environment, in a sentence: the Crawlbase token
    when URL citations are recorded, each judge's key, and a ranker's extra (the
    checks :func:`preflight` makes before anything is fetched)."""
    from pytest_citecheck.core.providers import PROVIDER_ENV
    from pytest_citecheck.stages.judges import parse_judge_spec

    needs = [CRAWLBASE_TOKEN_ENV] if urls else []
    for spec in dict.fromkeys(judges):
        try:
            provider, _ = parse_judge_spec(spec)
        except ValueError:
            continue  # a bad judge is reported where it is used
        env = PROVIDER_ENV.get(provider)
        if env is not None and env.key_required:
            needs.append(f"{env.key_env} for the judge {spec}")
    needs.append("the embed or bm25 extra")
    return ", ".join(needs[:-1]) + f" and {needs[-1]}" if len(needs) > 1 else needs[0]


def _ranker_problem(stages: StageBuilder) -> str | None:
    """What the built-in ranker would miss when it ranks (a custom one is the
    user's): found before any page is fetched and billed, not after."""
    if not stages.builtin_ranker:
        return None
    from pytest_citecheck.core.defaults import DEFAULT_RANKER
    from pytest_citecheck.stages import embedder, retrieval

    name = stages.settings.ranker or DEFAULT_RANKER
    missing = retrieval.missing_modules(name)
    if not missing:
        return None
    terms = stages.settings.terms
    model = any(m in missing for m in retrieval.MODEL_MODULES)
    hint = embedder.INSTALL_HINT if model else retrieval.BM25_INSTALL_HINT
    light = (
        f", or rank without the model: {terms.setting('ranker', 'bm25')} (the bm25 extra)"
        if model and name != "bm25"
        else ""
    )
    them = "it is" if len(missing) == 1 else "they are"
    return (
        f"recording ranks the pages' passages with the {name} ranker, which needs "
        f"{' and '.join(missing)}; {them} not installed: {hint}{light}"
        f"{terms.replay_hint()}"
    )


def _judge_problem(stages: StageBuilder, spec: str, records: bool, named: bool) -> str | None:
    """What keeps judge ``spec`` from judging (and recording, if it ``records``);
    ``named``: a claim file chose it (the default judge too, when a file names it)."""
    settings = stages.settings
    from_flag = bool(settings.judges) and spec in (settings.judges or ())
    from_file = settings.judge is None and spec != DEFAULT_JUDGE and not from_flag
    try:
        stages.judge(spec)
        if records and stages.is_builtin_judge(spec):
            stages.builtin_judge(spec, require_key=True)
    except ValueError as exc:
        # A claim file's bad judge fails that file's claims, not the session.
        return None if from_file else f"{str(exc).rstrip('.')}{_origin(stages, spec, named)}"
    except ConfigurationError as exc:
        return f"{str(exc).rstrip('.')}{_origin(stages, spec, named)}"
    return None


def _origin(stages: StageBuilder, spec: str, named: bool = False) -> str:
    """Where the judge ``spec`` came from, in the front end's words (``named``: a
    claim file chose it, so it is not called the default even when it is)."""
    s = stages.settings
    terms = s.terms
    if s.judges and spec in s.judges:
        return f" (judge {spec} is a member of the judge panel, {terms.option('judges')})"
    if s.judge is not None and spec == s.judge:
        if s.judge_origin is None:
            return ""
        return f" (judge {spec} comes from {terms.judge_origin(s.judge_origin)})"
    if spec == DEFAULT_JUDGE and not named:
        return f" ({spec} is the default judge; choose another with {terms.option('judge')})"
    return f" (judge {spec} comes from {terms.judge_origin(JUDGE_FROM_CLAIM)})"
