"""Secrets and oversized results never reach the store or a report.

A trace holds whatever the agent passed to its tools and read back: API keys in arguments,
bearer tokens in headers, a 30 MB page. :class:`Redactor` rewrites a trial's events before they
are scored or stored:

* **Known key shapes** anywhere in any text: OpenAI (``sk-``, ``sk-proj-``), Anthropic
  (``sk-ant-``), AWS access key ids (``AKIA``/``ASIA`` + 16), GitHub tokens (``ghp_``, ``gho_``,
  ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack tokens (``xoxb-``, ``xoxp-``, ...), Google
  API keys (``AIza`` + 35), JSON Web Tokens (three base64url parts, the first two JSON objects),
  PEM private keys, and the credential after ``Authorization: Bearer`` / ``Basic`` (or any
  ``Bearer`` followed by 16 or more token characters). Each becomes ``[REDACTED:<kind>]``.
* **Secret-named fields**: the whole value of a mapping key whose last word is ``api_key``,
  ``apikey``, ``token``, ``password``, ``passwd``, ``secret``, ``authorization``,
  ``credential(s)``, ``private_key`` or ``access_key`` (``openai_api_key``, ``github_token``,
  ``db_password``, ``client_secret``, ``X-Api-Key``, ...) becomes ``[REDACTED]``. Counters such
  as ``max_tokens`` or ``input_tokens`` are not secrets and are left alone.
* **The user's own**: extra regular expressions and field names (``--redact``, the manifest's
  ``redact``). Each pattern searches each value for at most ``USER_PATTERN_SECONDS``; a value
  it cannot finish is replaced whole.

Every built-in shape is linear by construction: no quantifier nested in another, and no two
quantifiers over overlapping characters without a required character between them that the
first cannot match (``tests/adversarial/test_redaction_linear.py`` checks the parsed patterns;
``benchmarks/bench_redact.py`` times them on adversarial text up to 1 MB). A shape's look-behind
refuses only a letter or digit before it, so ``task-sk-...`` and ``leak_ghp_...`` are found.

The shapes are anchored on their prefixes and lengths so that look-alikes stay intact: SHA-256
digests, UUIDs, hbeval fingerprints, order ids like ``ORD-12345``, ordinary prose.

Tool results are capped at ``max_result_bytes`` (64 KB by default) of JSON text each: the kept
prefix is stored as text and the event's ``attrs["result_truncated"]`` records the original
length. The same cap applies to tool errors and to the text of each model input message.

Every change is listed on the event's ``attrs["sanitised"]`` (the secret itself never is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "REDACTED",
    "Redactor",
    "id_digest",
    "parse_redact_rules",
]

DEFAULT_MAX_RESULT_BYTES: Final = 64 * 1024
REDACTED: Final = "[REDACTED]"
ATTR_RESULT_TRUNCATED: Final = "result_truncated"

# Each shape: (kind, pattern). A group named ``keep`` is kept (the header before a token).
_SHAPES: Final[tuple[tuple[str, str], ...]] = (
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*"
        r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----",
    ),
    ("anthropic_key", r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_key", r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("aws_access_key", r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
    (
        "github_token",
        r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("slack_token", r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,}"),
    ("google_api_key", r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
    ("jwt", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    (
        "authorization",
        r"(?P<keep>\b(?i:authorization)\b[\"']?\s*[:=]\s*(?:[\"']\s*)?(?i:bearer|basic|token)\s+)"
        r"[A-Za-z0-9._~+/=-]+",
    ),
    ("bearer_token", r"(?P<keep>\b[Bb]earer\s+)[A-Za-z0-9._~+/-]{16,}=*"),
)

_LITERALS: Final[dict[str, tuple[str, ...]]] = {
    "private_key": ("PRIVATE KEY-----",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "aws_access_key": ("AKIA", "ASIA"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox",),
    "google_api_key": ("AIza",),
    "jwt": ("eyJ",),
    "authorization": ("uthorization", "UTHORIZATION"),
    "bearer_token": ("earer",),
}
"""Text each shape cannot match without: the regex runs only where one of them occurs."""
_GATES: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    _LITERALS["private_key"]: ("V",),
    _LITERALS["aws_access_key"]: ("I",),
    _LITERALS["github_token"]: ("gh", "github_pat_"),
    _LITERALS["slack_token"]: ("x",),
    _LITERALS["google_api_key"]: ("z",),
    _LITERALS["jwt"]: ("J",),
    _LITERALS["authorization"]: ("z", "Z"),
}
"""For a shape's literals, shorter text one of which each literal contains (a text holding none
of them holds none of the literals): mostly single characters, which are found by ``memchr``,
where each literal of three or more characters costs a scan of the whole text."""


_ONE_PASS: Final[dict[tuple[str, ...], re.Pattern[str]]] = {
    _LITERALS["github_token"]: re.compile(r"gh[pousr]_|github_pat_"),
    _LITERALS["aws_access_key"]: re.compile(r"A(?:KIA|SIA)"),
}
"""For a shape with several literals sharing a prefix, one regex that matches exactly where one
of them occurs: one pass over the text instead of one per literal (on 25 KB of tool output,
github's six literals take 94 us one by one and 23 us this way; AWS's two, 31 and 17 us)."""


def _holds(text: str, literals: tuple[str, ...]) -> bool:
    """Whether ``text`` contains one of ``literals`` (looked for behind their gates)."""
    gates = _GATES.get(literals)
    if gates is not None:
        for gate in gates:
            if gate in text:
                break
        else:
            return False
    one_pass = _ONE_PASS.get(literals)
    if one_pass is not None:
        return one_pass.search(text) is not None
    for literal in literals:
        if literal in text:
            return True
    return False


_NAME_WORD: Final = re.compile(
    r"(?i)(?:key|token|passw(?:or)?d|passwd|secret|authorization|credentials?)(?![a-z0-9])"
)
_NAME_WORDS: Final = (
    "key", "token", "password", "passwd", "secret", "authorization", "credential", "credentials",
)  # fmt: skip
"""The words ``_NAME_WORD`` matches, in lower case (for ASCII text, its only case folds)."""
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _has_name_word(low: str) -> bool:
    """Whether lower-cased ASCII ``low`` holds a word ``_NAME_WORD`` matches: one of
    ``_NAME_WORDS`` not followed by a letter or digit (``tokens`` is not ``token``)."""
    size = len(low)
    for gate, words in _NAME_GROUPS:
        if gate is not None and gate not in low:
            continue  # none of the group's words can occur
        for word in words:
            start = low.find(word)
            while start != -1:
                end = start + len(word)
                if end == size or low[end] not in _ALNUM:
                    return True
                start = low.find(word, start + 1)
    return False


_NAME_GROUPS: Final[tuple[tuple[str | None, tuple[str, ...]], ...]] = (
    (None, ("key",)),
    (None, ("token",)),
    ("passw", ("password", "passwd")),
    (None, ("secret",)),
    ("z", ("authorization",)),
    ("credential", ("credential", "credentials")),
)
"""``_NAME_WORDS`` in groups, each behind text all its words contain (one scan instead of two;
``z`` is found by ``memchr``)."""


_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

_SECRET_WORDS: Final = (
    "api_key",
    "apikey",
    "token",
    "password",
    "passwd",
    "secret",
    "authorization",
    "credential",
    "credentials",
    "private_key",
    "access_key",
    "secret_key",
)
_NAME_SPLIT: Final = re.compile(r"[^a-z0-9]+")

# A secret-named field written inside text: ``"api_key": "..."`` (JSON, Python reprs) and
# ``password=...`` (query strings, env lines). Only names ``secret_name`` accepts are redacted.
_QUOTED_FIELD: Final = re.compile(
    r"(?P<keep>(?P<q>[\"'])(?P<name>[A-Za-z0-9_.-]{1,64})(?P=q)\s*:\s*(?P<vq>[\"']))"
    r"(?P<value>(?:\\.|(?!(?P=vq))[^\\])+)(?=(?P=vq))"
)
_ASSIGNED_FIELD: Final = re.compile(
    r"(?P<keep>(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]{1,64})=)(?P<value>[^&\s\"',;]+)"
)


USER_PATTERN_SECONDS: Final = 1.0
"""How long one user pattern (``--redact``) may search one value. A pattern such as ``(a+)+$``
can take exponential time; past the limit the whole value is replaced by
``[REDACTED:pattern_timed_out]`` (nothing it might have held is stored) and the run goes on.
The ``regex`` package enforces the limit on any thread (``SIGALRM`` works on the main thread
only)."""
KIND_TIMED_OUT: Final = "pattern_timed_out"


ID_KEY_ENV: Final = "HBEVAL_REDACT_KEY"
"""Environment variable holding the key of redacted identifiers' digests (``id_digest``)."""
_DEFAULT_ID_KEY: Final = b"hbeval-redacted-id/1"


def id_digest(secret: str) -> str:
    """24 hex of HMAC-SHA256 over ``secret``, keyed by ``$HBEVAL_REDACT_KEY`` (a fixed public
    key without it: stable everywhere; set the variable so a digest cannot be tried against
    guesses). The secret itself is never kept."""
    import hashlib
    import hmac
    import os

    key = os.environ.get(ID_KEY_ENV)
    raw = key.encode("utf-8") if key else _DEFAULT_ID_KEY
    return hmac.new(raw, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:24]


def _user_regex(rule: str) -> Any:
    """A user's pattern, compiled by the ``regex`` package (whose searches take ``timeout=``)."""
    import regex

    return regex.compile(rule)


def _normalise_name(name: str) -> str:
    """``X-Api-Key`` -> ``x_api_key``; ``openaiApiKey`` -> ``openai_api_key``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return "_".join(p for p in _NAME_SPLIT.split(spaced.lower()) if p)


def _is_secret_word(normalised: str, words: Iterable[str]) -> bool:
    for word in words:
        if normalised == word or normalised.endswith("_" + word):
            return True
    return False


def parse_redact_rules(rules: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split ``--redact`` values into (regexes, field names); ``name:FIELD`` is a field name.

    Raises ``ValueError`` naming the rule when a regex does not compile or matches the empty
    string (which would redact everything).
    """
    patterns: list[str] = []
    names: list[str] = []
    for rule in rules:
        if not isinstance(rule, str) or not rule:
            raise ValueError(f"redact rule {rule!r} is empty; give a regex or name:FIELD")
        if rule.startswith("name:"):
            name = rule[5:].strip()
            if not name:
                raise ValueError(f"redact rule {rule!r} names no field; write name:FIELD")
            names.append(name)
            continue
        try:
            compiled = _user_regex(rule)
        except Exception as exc:  # regex.error (or re.error)
            raise ValueError(f"redact rule {rule!r} is not a valid regex: {exc}") from None
        if compiled.search("") is not None:
            raise ValueError(f"redact rule {rule!r} matches empty text; it would redact everything")
        patterns.append(rule)
    return patterns, names


@dataclass(frozen=True)
class Redactor:
    """Replaces secrets and caps tool results; see the module docstring for the rules.

    ``patterns`` and ``names`` add the user's own regexes and field names to the built-in
    ones; ``builtin=False`` keeps only those. ``max_result_bytes`` None turns the cap off.
    """

    patterns: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    builtin: bool = True
    max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES
    _compiled: tuple[tuple[str, Any, tuple[str, ...]], ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    _names: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    _hints: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)
    _name_cache: dict[str, bool] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        user_patterns, _ = parse_redact_rules(self.patterns)
        compiled = (
            [(kind, re.compile(p), _LITERALS[kind]) for kind, p in _SHAPES] if self.builtin else []
        )
        compiled += [("custom", _user_regex(p), ()) for p in user_patterns]
        object.__setattr__(self, "_compiled", tuple(compiled))
        names = frozenset(_normalise_name(n) for n in self.names)
        object.__setattr__(self, "_names", names)
        hints: list[str] = []
        for name in names:
            hints += [name, name.replace("_", "-"), name.replace("_", "")]
        object.__setattr__(self, "_hints", tuple(dict.fromkeys(h for h in hints if h)))
        cap = self.max_result_bytes
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 256):
            raise ValueError(f"max_result_bytes must be an int >= 256 or None (got {cap!r})")

    @classmethod
    def from_rules(
        cls, rules: Iterable[str] = (), *, max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES
    ) -> Redactor:
        """A redactor with the built-in shapes plus ``--redact`` rules (regex or ``name:FIELD``)."""
        patterns, names = parse_redact_rules(rules)
        return cls(tuple(patterns), tuple(names), max_result_bytes=max_result_bytes)

    def as_dict(self) -> dict[str, Any]:
        """What the run's manifest records (the rules, never a matched value)."""
        return {
            "builtin": self.builtin,
            "patterns": list(self.patterns),
            "names": list(self.names),
            "max_result_bytes": self.max_result_bytes,
        }

    # ------------------------------------------------------------------ text and names
    def may_hold_secret(self, text: str) -> bool:
        """False only when ``text`` surely holds nothing to redact (a cheap first look).

        Matches any key shape, or holds any fragment of a secret field name: a text this
        returns False for is left alone without walking it.
        """
        return self._may_hold(text, self._compiled, bool(self._hints), self.builtin)

    def _may_hold(
        self,
        text: str,
        compiled: Iterable[tuple[str, Any, tuple[str, ...]]],
        hints: bool,
        names: bool,
    ) -> bool:
        """``may_hold_secret`` with only the given shapes, hints and name test."""
        for kind, pattern, literals in compiled:
            if literals and not _holds(text, literals):
                continue
            if kind == "custom":
                try:
                    if pattern.search(text, timeout=USER_PATTERN_SECONDS) is not None:
                        return True
                except TimeoutError:
                    return True  # redact_text replaces the whole value
                continue
            if pattern.search(text) is not None:
                return True
        if hints:
            low = text.lower()
            if any(hint in low for hint in self._hints):
                return True
        return names and self._names_a_secret(text)

    def rewrites(self, bodies: Sequence[str]) -> list[bool]:
        """``[self.needs_rewrite(body) for body in bodies]``, for a trial's event bodies at once.

        What none of the bodies holds is looked for once, in all of them together: a shape
        whose literals occur in none of them, the user's names and the secret-name words are
        then not looked for in each. A body's answer is the same as ``needs_rewrite``'s.
        """
        joined = "\x00".join(bodies)  # JSON text never holds a raw NUL: no literal spans two
        compiled = [entry for entry in self._compiled if not entry[2] or _holds(joined, entry[2])]
        low = joined.lower() if self._hints or self.builtin else ""
        hints = bool(self._hints) and any(hint in low for hint in self._hints)
        names = self.builtin and (not joined.isascii() or _has_name_word(low))
        cap = self.max_result_bytes
        out: list[bool] = []
        for body in bodies:
            if cap is not None and len(body) > cap // 4 and len(body.encode("utf-8")) > cap:
                out.append(True)
            else:
                out.append(self._may_hold(body, compiled, hints, names))
        return out

    def _names_a_secret(self, text: str) -> bool:
        """Whether a word in ``text`` is a secret field name (``api_key``, ``githubToken``)."""
        if text.isascii() and not _has_name_word(text.lower()):
            return False  # the regex folds only ASCII case here: plain searches suffice
        for match in _NAME_WORD.finditer(text):
            start = match.start()
            low = max(0, start - 64)
            while start > low and text[start - 1] in _NAME_CHARS:
                start -= 1
            if self.secret_name(text[start : match.end()]):
                return True
        return False

    def redact_text(self, text: str) -> tuple[str, list[str]]:
        """``text`` with every secret replaced, and the kinds replaced (one per match)."""
        kinds: list[str] = []
        if ("=" in text or ":" in text) and (self._names or self._names_a_secret(text)):

            def named(match: re.Match[str]) -> str:
                value = match.group("value")
                if value.startswith("[REDACTED") or not self.secret_name(match.group("name")):
                    return match.group(0)
                kinds.append("secret_field")
                return match.group("keep") + REDACTED

            text = _QUOTED_FIELD.sub(named, text)
            text = _ASSIGNED_FIELD.sub(named, text)
        for kind, pattern, literals in self._compiled:
            if literals and not _holds(text, literals):
                continue

            def replace(match: Any, kind: str = kind) -> str:
                kinds.append(kind)
                keep = match.groupdict().get("keep") or ""
                return f"{keep}[REDACTED:{kind}]"

            if kind == "custom":
                try:
                    text = pattern.sub(replace, text, timeout=USER_PATTERN_SECONDS)
                except TimeoutError:
                    kinds.append(KIND_TIMED_OUT)
                    return f"[REDACTED:{KIND_TIMED_OUT}]", kinds
                continue
            if pattern.search(text) is None:
                continue
            text = pattern.sub(replace, text)
        return text, kinds

    def redact_id(self, value: str) -> str:
        """An identifier (task, trace, span or call id, a tool name) with each secret in it
        replaced by ``[REDACTED:<kind>:<digest>]``, the digest keyed (``id_digest``) over the
        secret: the same id always gives the same text, and two different ids never one."""
        if not self.may_hold_secret(value):
            return value
        out = value
        for kind, pattern, literals in self._compiled:
            if literals and not _holds(out, literals):
                continue

            def replace(match: Any, kind: str = kind) -> str:
                keep = match.groupdict().get("keep") or ""
                return f"{keep}[REDACTED:{kind}:{id_digest(match.group(0)[len(keep) :])}]"

            if kind == "custom":
                try:
                    out = pattern.sub(replace, out, timeout=USER_PATTERN_SECONDS)
                except TimeoutError:
                    return f"[REDACTED:{KIND_TIMED_OUT}:{id_digest(value)}]"
            elif pattern.search(out) is not None:
                out = pattern.sub(replace, out)
        return out

    def secret_name(self, name: str) -> bool:
        """True when a field called ``name`` holds a secret (its whole value is redacted)."""
        known = self._name_cache.get(name)
        if known is None:
            known = self._secret_name(name)
            if len(self._name_cache) < 4096:
                self._name_cache[name] = known
        return known

    def _secret_name(self, name: str) -> bool:
        normalised = _normalise_name(name)
        if not normalised:
            return False
        if self._names and (normalised in self._names or _is_secret_word(normalised, self._names)):
            return True
        return self.builtin and _is_secret_word(normalised, _SECRET_WORDS)

    def text_hook(self, text: str, path: str, notes: list[str]) -> str:
        """The ``storable_events`` hook: redact one string, noting the kinds found."""
        clean, kinds = self.redact_text(text)
        if kinds:
            counted = sorted(set(kinds))
            notes.append(f"{path}: redacted {len(kinds)} secret(s) ({', '.join(counted)})")
        return clean

    # ------------------------------------------------------------------ size cap
    def needs_rewrite(self, body: str) -> bool:
        """Whether an event whose JSON text is ``body`` must be walked (a secret or too long)."""
        cap = self.max_result_bytes
        if cap is not None and len(body) > cap // 4 and len(body.encode("utf-8")) > cap:
            return True
        return self.may_hold_secret(body)

    def cap_text(self, text: str) -> tuple[str, int | None]:
        """``text`` cut to the byte cap (on a character boundary) and its original length
        in bytes, or ``(text, None)`` when it fits."""
        cap = self.max_result_bytes
        if cap is None or len(text) <= cap // 4:
            return text, None
        raw = text.encode("utf-8", "replace")
        if len(raw) <= cap:
            return text, None
        kept = raw[:cap].decode("utf-8", "ignore")
        return kept + f"... [truncated: {len(raw)} bytes in all]", len(raw)

    def cap_value(self, value: Any) -> tuple[Any, int | None]:
        """A tool result within the cap: as it is, or its JSON text cut to the cap."""
        if self.max_result_bytes is None:
            return value, None
        if isinstance(value, str):
            return self.cap_text(value)
        if value is None or isinstance(value, (bool, int, float)):
            return value, None
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except Exception:  # unserialisable: sanitising deals with it
            return value, None
        capped, original = self.cap_text(text)
        return (value, None) if original is None else (capped, original)


def merge_notes(attrs: Mapping[str, Any], key: str, notes: list[str]) -> dict[str, Any]:
    """``attrs`` with ``notes`` appended to the list under ``key``."""
    out = dict(attrs)
    earlier = out.get(key)
    out[key] = [*(earlier if isinstance(earlier, list) else ()), *notes]
    return out
