"""``hbeval passport keygen | sign | verify``: signed passports (hbeval-passport/1)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import DB_HELP as _DB_HELP
from ._common import (
    EXIT_CHECK_FAILED,
    EXIT_INSUFFICIENT,
    EXIT_OK,
    SOURCE_HELP,
    emit_json,
    plain_app,
)
from ._common import fail as _fail

__all__ = ["passport_app"]


def _emit(data: Any) -> None:
    emit_json(data, default=str)


passport_app = plain_app("passport", "Signed passports (hbeval-passport/1): keygen, sign, verify.")


@passport_app.command("keygen")
def passport_keygen(
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Private key file (default ./.hbeval/passport-key.pem)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Create an Ed25519 signing key (PEM, mode 0600) and its public key beside it (.pub)."""
    import base64

    from ..report.passport import PassportError, key_id, public_key_raw, write_private_key
    from ._outpaths import output_problem

    if out is not None:
        for target in (out, Path(f"{out}.pub")):
            problem = output_problem(target, make_parents=True, store=None)
            if problem is not None:
                raise _fail(f"--out: {problem}")
    try:
        path, key = write_private_key(out, force=force)
    except (PassportError, OSError) as exc:
        raise _fail(str(exc)) from None
    raw = public_key_raw(key)
    info = {
        "private_key": str(path),
        "public_key_file": f"{path}.pub",
        "public_key": base64.b64encode(raw).decode("ascii"),
        "key_id": key_id(raw),
    }
    if as_json:
        _emit(info)
        return
    typer.echo(f"signing key written to {path} (mode 0600; keep it secret)")
    typer.echo(f"public key {info['public_key']} (key_id {info['key_id']}) in {path}.pub")


@passport_app.command("sign")
def passport_sign(
    report: Annotated[str, typer.Argument(metavar="REPORT.json", help=SOURCE_HELP)],
    key: Annotated[
        Path | None,
        typer.Option("--key", help="Signing key PEM (default: $HBEVAL_PASSPORT_KEY)."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write the passport.")] = Path(
        "hbeval-passport.json"
    ),
    days: Annotated[int, typer.Option("--days", help="Days until it expires (1-365).")] = 90,
    db: Annotated[str | None, typer.Option("--db", help=_DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Build a passport from a report and sign it with Ed25519."""
    from ..report.passport import (
        PassportError,
        build_passport,
        load_private_key,
        render_passport,
        sign_passport,
    )
    from ._outpaths import output_problem, write_output

    report_file = (
        report.rpartition("#")[0] if "#" in report and not Path(report).is_file() else report
    )
    problem = output_problem(out, make_parents=True, store=db, inputs=[report_file, key])
    if problem is not None:
        raise _fail(f"--out: {problem}")
    try:
        from ._report import load_one

        _, data = load_one(report, db)
        checked = _provenance(report_file, data, db)
        private = load_private_key(key)
        passport = sign_passport(build_passport(data, days=days, provenance=checked), private)
        write_output(out, render_passport(passport))
    except (PassportError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _emit({"passport": str(out), **passport})
        return
    typer.echo(
        f"passport for agent {passport['agent']['agent_id']} written to {out} (key_id "
        f"{passport['signer']['key_id']}, expires {passport['expires_at']})"
    )


def _provenance(source: str, report: Any, db: str | None) -> str | None:
    """The store the report is checked against (its name, a password masked), or None.

    A report read from the store is the store's; a report file given with ``--db`` must be
    the one the store keeps for its run (the same binding digest over identity and trials),
    else ``ValueError``. A file without ``--db`` is not checked (None).
    """
    from .._urls import masked_url
    from ..scoring._binding import report_digest
    from ..store import open_store

    from_file = Path(source).is_file()
    if db is None:
        if from_file:
            return None
        from ..store import resolve_path

        return masked_url(str(resolve_path(None)))
    if from_file:
        store = open_store(db, read_only=True)
        try:
            stored = store.get_report(str(report.run_id))
        finally:
            store.close()
        if stored is None:
            raise ValueError(
                f"run {report.run_id!r} has no report in the store {masked_url(db)}: the "
                "report file does not come from this store; sign the run from its own store"
            )
        if report_digest(stored.to_dict()) != report_digest(report.to_dict()):
            raise ValueError(
                f"{source} is not the report the store {masked_url(db)} keeps for run "
                f"{report.run_id!r}: its identity (run id, agent id, manifest hash, "
                "measurement fingerprint) or trials differ; sign the report as hbeval wrote it"
            )
    return masked_url(db)


@passport_app.command("verify")
def passport_verify(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A passport file.")],
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="Trusted public key: PEM file, base64 raw key, or a key id from the "
            "trusted-keys file (pins the signer).",
        ),
    ] = None,
    trusted_keys: Annotated[
        Path | None,
        typer.Option(
            "--trusted-keys",
            help="Trusted-keys file (default $HBEVAL_TRUSTED_KEYS or "
            "~/.config/hbeval/trusted_keys): lines '<base64 key> [label]'.",
        ),
    ] = None,
    no_key_check: Annotated[
        bool,
        typer.Option(
            "--no-key-check",
            help="Accept a passport whose signer was not checked (integrity only): exit 0, not 3.",
        ),
    ] = False,
    any_layout: Annotated[
        bool,
        typer.Option(
            "--any-layout", help="Accept a re-formatted file whose signed content is intact."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Verify a passport: integrity, content, expiry and who signed it.

    Exit 0 valid with the signer pinned, 1 not valid, 2 bad input, 3 valid but authenticity not
    checked (no --key and no trusted-keys file; anyone can re-sign a passport with their own key)
    unless --no-key-check.
    """
    from ..report.passport import verify_passport

    data, trusted, known = _read_for_verify(file, key, trusted_keys)
    result = verify_passport(
        data, trusted_key=trusted, trusted_keys=known, strict_layout=not any_layout
    )
    unchecked = result.valid and result.authenticity == "not_checked"
    if as_json:
        _emit({"file": str(file), **result.as_dict()})
    elif result.valid:
        who = (
            "pinned to a trusted key"
            if result.authenticity == "pinned"
            else "NOT CHECKED (pass --key or a trusted-keys file)"
        )
        typer.echo(
            f"VALID passport for agent {result.agent_id} (verdict {result.verdict}), signed by "
            f"key {result.key_id}, expires {result.expires_at}; authenticity: {who}"
        )
        for note in result.notes:
            typer.echo(f"  note: {note}")
    else:
        typer.echo(f"INVALID passport {file}:", err=True)
        for problem in result.problems:
            typer.echo(f"  - {problem}", err=True)
    if not result.valid:
        raise typer.Exit(EXIT_CHECK_FAILED)
    raise typer.Exit(EXIT_INSUFFICIENT if unchecked and not no_key_check else EXIT_OK)


def _read_for_verify(
    file: Path, key: str | None, trusted_keys: Path | None
) -> tuple[bytes, Any, list[Any]]:
    """The passport's bytes, the key ``--key`` pins (None if none) and the trusted keys known."""
    from ..report._passport_schema import default_trusted_keys_path, is_key_id, parse_trusted_keys
    from ..report.passport import PassportError, load_public_key

    keys_path = trusted_keys if trusted_keys is not None else default_trusted_keys_path()
    try:
        data = file.read_bytes()
        known = []
        if trusted_keys is not None or keys_path.is_file():
            known = parse_trusted_keys(keys_path.read_text(encoding="utf-8"), str(keys_path))
        trusted = None
        if key is not None:
            by_id = [k for k in known if k.key_id == key.strip()]
            if by_id:
                trusted = by_id[0].public_raw
            elif is_key_id(key.strip()) and not Path(key).exists():
                raise PassportError(
                    f"--key {key}: no key with that id in the trusted-keys file {keys_path}"
                )
            else:
                trusted = load_public_key(key)
    except (PassportError, OSError, ValueError) as exc:
        raise _fail(str(exc)) from None
    return data, trusted, known
