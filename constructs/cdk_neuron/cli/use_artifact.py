"""``cdk-neuron use-artifact``: serve a compiled artifact, checked first, written into cdk.json.

It reads an artifact's ``cdk-neuron-artifact.json`` (a local file, or from S3: the artifact prefix
``s3://bucket/prefix/`` or the manifest's own URI), compares it with what the environment's fleet
serves (batch, sequence length, TP, dtype, engine, the image's Neuron SDK: the comparison the fleets
make at synthesis, :meth:`cdk_neuron.serving.ArtifactManifest.mismatches`), and only when nothing
differs:

- copies the manifest beside the app (default ``artifacts/<env>/cdk-neuron-artifact.json``), so
  synthesis checks the fleet against it offline and the change is reviewable in git;
- sets ``environments.<env>.serving.model.artifact_uri`` and ``.artifact_manifest`` in cdk.json,
  editing only those two values (the file's formatting, order and every other key stay as they were).

``--verify`` also reads every file the manifest lists from the artifact prefix and compares its size and
SHA-256 with the manifest's (``s3:GetObject``, streamed: nothing is kept on disk). It reads the whole
artifact once, from where the operator runs the command, so it is opt-in: the one place the hashes are
checked, before a fleet is pointed at the bytes. The fleets themselves check the manifest's files by
name and size (preflight's ``artifact files`` row) and hash nothing at start-up, where every second of
a cold start counts.

``--dry-run`` checks and shows what would be written, and writes nothing. A mismatch writes nothing
and exits 1, naming each field. An app whose cdk.json has no ``serving.model`` passes the artifact to
its fleet in code instead (``ModelSpec(artifact_uri=...)``, ``artifact_manifest=``), which the command
says.

What the change then does is the lifecycle's: the EC2 fleet replaces its instances by an instance
refresh at 100% healthy, each new instance reading the new prefix while the old ones keep their grant
on the old prefix until clean-up; a SageMaker endpoint is updated to a new model and endpoint config
(blue/green). Nothing deletes the old prefix. ``cdk-neuron impact`` shows it (docs/lifecycle.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.command import Command, environment_options, in_region, one_environment
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.preflight.artifacts import served_image
from cdk_neuron.cli.result import OMIT_IF_NONE, Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest
from cdk_neuron.serving.model_spec import parse_s3_uri

DEFAULT_MANIFEST_DIR = "artifacts"
"""Where the manifest copy goes, relative to cdk.json: ``artifacts/<env>/cdk-neuron-artifact.json``."""


@dataclass(frozen=True)
class UseArtifact(Result):
    """``cdk-neuron use-artifact``: the artifact, the check, and what was (or would be) written."""

    command = "use-artifact"
    environment: str
    manifest_source: str
    artifact_uri: str
    previous_artifact_uri: str | None
    shape: str
    engine: str
    neuron_sdk: str | None
    compile_minutes: float
    mismatches: list[str]
    written: bool
    dry_run: bool
    verified: int | None = field(default=None, metadata=OMIT_IF_NONE)
    """With ``--verify``: how many files were read back and matched their size and SHA-256."""
    cdk_json: str | None = field(default=None, metadata=OMIT_IF_NONE)
    manifest_path: str | None = field(default=None, metadata=OMIT_IF_NONE)
    changes: list[str] = field(default_factory=list)
    summary: str = ""


def render(result: UseArtifact) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: artifact",
        [
            ("manifest", result.manifest_source),
            ("artifact", result.artifact_uri),
            ("serving now", result.previous_artifact_uri or "(none: the Hub)"),
            ("shape", result.shape),
            ("engine", f"{result.engine}, Neuron SDK {result.neuron_sdk or 'unknown'}"),
            ("compiled in", f"{result.compile_minutes:.1f} min"),
            *(
                [("verified", f"{result.verified} file(s): size and SHA-256 as the manifest lists them")]
                if result.verified is not None
                else []
            ),
        ],
    )
    if result.mismatches:
        out.notes("Differs from the fleet", result.mismatches)
    if result.changes:
        out.notes("Would write" if result.dry_run else "Written", result.changes)
    out.line(result.summary, style="bold")
    return out


# -- reading the manifest ---------------------------------------------------------------------------


def read_manifest(ctx: Context, where: str, region: str) -> tuple[str, ArtifactManifest]:
    """The manifest's text and parsed form: a local path, ``s3://bucket/prefix/`` or the manifest's S3 URI."""
    if not where.startswith("s3://"):
        path = Path(where)
        if not path.is_absolute() and ctx.cwd is not None:
            path = Path(ctx.cwd) / path
        manifest = ArtifactManifest.from_file(path)
        return path.read_text(), manifest
    if where.endswith(f"/{MANIFEST_NAME}"):
        location = parse_s3_uri(where[: -len(MANIFEST_NAME)], field="MANIFEST")
    else:
        location = parse_s3_uri(where, field="MANIFEST")
    key = f"{location.prefix}/{MANIFEST_NAME}" if location.prefix else MANIFEST_NAME
    try:
        body = ctx.aws("s3", region).get_object(Bucket=location.bucket, Key=key)["Body"].read()
    except Exception as error:
        code = error_code(error)
        if code in ("NoSuchKey", "NoSuchBucket", "404"):
            raise NeuronConfigError(
                "MANIFEST",
                f"s3://{location.bucket}/{key}",
                f"{'no such bucket' if code == 'NoSuchBucket' else 'no manifest there'}: give the artifact prefix "
                "cdk-neuron compile wrote (it writes the manifest last, so a compile still running has none yet)",
            ) from None
        if code in ("AccessDenied", "403"):
            # Without s3:ListBucket, S3 answers a missing key with 403 too ("If you don't have the
            # s3:ListBucket permission, Amazon S3 returns an HTTP status code 403": GetObject, Amazon S3 API
            # Reference), so this is either case.
            raise NeuronConfigError(
                "MANIFEST",
                f"s3://{location.bucket}/{key}",
                "access denied: either no manifest is there yet (a compile still running writes it last) and you "
                "lack s3:ListBucket on the bucket, which makes S3 say 403 for a missing key, or you lack "
                "s3:GetObject on the prefix; grant both, or give the prefix a finished compile wrote",
            ) from None
        raise
    text = body.decode() if isinstance(body, bytes) else str(body)
    return text, ArtifactManifest.from_json(text, where=f"s3://{location.bucket}/{key}")


# -- writing cdk.json ---------------------------------------------------------------------------------


_DECODER = json.JSONDecoder()


class _Spans:
    """The character span of every value of a JSON document, by key path (a tiny JSON scanner).

    Only what editing one value in place needs: where each value starts and ends, and where each
    object's members are, so a value is replaced or a member appended without reformatting the file.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.values: dict[tuple[str, ...], tuple[int, int]] = {}
        self.last_member: dict[tuple[str, ...], tuple[int, int]] = {}
        """Per object path: the span of its last member (key start, value end)."""
        end = self._value(self._skip(0), ())
        if self._skip(end) != len(text):
            raise ValueError("trailing text after the JSON document")

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def _string(self, i: int) -> tuple[str, int]:
        value, end = _DECODER.raw_decode(self.text, i)
        return str(value), end

    def _value(self, i: int, path: tuple[str, ...]) -> int:
        start = i
        char = self.text[i]
        if char == "{":
            i = self._skip(i + 1)
            if self.text[i] == "}":
                end = i + 1
            else:
                while True:
                    key_start = i
                    key, i = self._string(i)
                    i = self._skip(i)
                    assert self.text[i] == ":"
                    i = self._value(self._skip(i + 1), (*path, key))
                    self.last_member[path] = (key_start, i)
                    i = self._skip(i)
                    if self.text[i] == ",":
                        i = self._skip(i + 1)
                        continue
                    assert self.text[i] == "}"
                    end = i + 1
                    break
        elif char == "[":
            i = self._skip(i + 1)
            index = 0
            if self.text[i] == "]":
                end = i + 1
            else:
                while True:
                    i = self._skip(self._value(i, (*path, str(index))))
                    index += 1
                    if self.text[i] == ",":
                        i = self._skip(i + 1)
                        continue
                    assert self.text[i] == "]"
                    end = i + 1
                    break
        elif char == '"':
            _, end = self._string(i)
        else:
            _, end = _DECODER.raw_decode(self.text, i)
        self.values[path] = (start, end)
        return end


def set_values(text: str, base: tuple[str, ...], values: dict[str, object]) -> str:
    """``text`` with each ``values`` key set in the object at ``base``, formatting kept: an existing
    value is replaced in place, a new key appended after the object's last member, indented like it."""
    for key, value in values.items():
        spans = _Spans(text)
        rendered = json.dumps(value)
        path = (*base, key)
        if path in spans.values:
            start, end = spans.values[path]
            text = text[:start] + rendered + text[end:]
            continue
        key_start, member_end = spans.last_member[base]
        line_start = text.rfind("\n", 0, key_start) + 1
        indent = text[line_start:key_start]
        separator = f",\n{indent}" if not indent.strip() else ", "
        text = text[:member_end] + f"{separator}{json.dumps(key)}: {rendered}" + text[member_end:]
    return text


def write_cdk_json(cdk_json: Path, env: str, values: dict[str, object]) -> list[str]:
    """Set ``environments.<env>.serving.model.<key>`` for each of ``values``; the lines changed."""
    text = cdk_json.read_text()
    document = json.loads(text)
    environments = document.get("context", {}).get("environments", {})
    model = (
        environments.get(env, {}).get("serving", {}).get("model") if isinstance(environments, dict) else None
    )
    if not isinstance(model, dict):
        raise NeuronConfigError(
            f"environments.{env}.serving.model",
            None,
            f"{cdk_json} has no such object to update: pass the artifact to your fleet in code "
            "(ModelSpec(artifact_uri=...), artifact_manifest=ArtifactManifest.from_file(...))",
        )
    base = ("context", "environments", env, "serving", "model")
    updated = set_values(text, base, values)
    expected = json.loads(text)
    expected["context"]["environments"][env]["serving"]["model"].update(values)
    if json.loads(updated) != expected:  # pragma: no cover - the scanner is exact; never write a guess
        raise NeuronConfigError(
            f"environments.{env}.serving.model", None, f"could not update {cdk_json}: edit it by hand"
        )
    cdk_json.write_text(updated)
    before, after = text.splitlines(), updated.splitlines()
    return [line.strip() for line in after if line not in before]


def verify_files(ctx: Context, manifest: ArtifactManifest, region: str) -> tuple[int, list[str]]:
    """Read every file the manifest lists from its artifact prefix: (files that match, one problem per
    file that is missing or whose size or SHA-256 differs)."""
    location = parse_s3_uri(manifest.artifact_uri)
    s3 = ctx.aws("s3", region)
    problems: list[str] = []
    matched = 0
    for item in manifest.files:
        key = f"{location.prefix}/{item.path}" if location.prefix else item.path
        try:
            body = s3.get_object(Bucket=location.bucket, Key=key)["Body"]
        except Exception as error:
            # Without s3:ListBucket, S3 answers a missing key with 403 rather than 404.
            if error_code(error) in ("NoSuchKey", "404", "AccessDenied", "403"):
                problems.append(f"verify: {item.path}: missing or unreadable at {manifest.artifact_uri}")
                continue
            raise
        digest, size = hashlib.sha256(), 0
        while chunk := body.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
        if size != item.bytes:
            problems.append(f"verify: {item.path}: {size} bytes, and the manifest lists {item.bytes}")
        elif digest.hexdigest() != item.sha256:
            problems.append(
                f"verify: {item.path}: sha256 {digest.hexdigest()}, and the manifest lists {item.sha256}: "
                "the file changed after the compile wrote it; compile again to a new prefix"
            )
        else:
            matched += 1
    return matched, problems


# -- the command --------------------------------------------------------------------------------------


def use_artifact(
    ctx: Context,
    env: Deployment,
    where: str,
    *,
    cdk_json: Path,
    manifest_path: str | None,
    dry_run: bool,
    verify: bool = False,
) -> UseArtifact:
    if env.serving is None:
        raise NeuronConfigError("--env", env.name, "has no inference fleet to serve an artifact")
    serving = env.serving
    text, manifest = read_manifest(ctx, where, env.region)
    # The artifact is the one being chosen: every other field must match the fleet as configured.
    model = replace(serving.model, artifact_uri=manifest.artifact_uri)
    mismatches = [
        str(e) for e in manifest.mismatches(model, serving.plan, serving.engine.name, served_image(serving))
    ]
    verified, problems = verify_files(ctx, manifest, env.region) if verify else (None, [])
    mismatches += problems
    shape = manifest.shape
    result = UseArtifact(
        environment=env.name,
        manifest_source=where,
        artifact_uri=manifest.artifact_uri,
        previous_artifact_uri=serving.model.artifact_uri,
        shape=f"batch {shape.batch_size} x {shape.sequence_length}, TP {shape.tensor_parallel}, {shape.dtype}",
        engine=f"{manifest.engine} {manifest.engine_version or ''}".rstrip(),
        neuron_sdk=manifest.neuron_sdk,
        compile_minutes=manifest.compile_seconds / 60,
        mismatches=mismatches,
        written=False,
        dry_run=dry_run,
        verified=verified,
    )
    if problems:
        return replace(
            result,
            summary=f"Not written: the files at {manifest.artifact_uri} are not the ones its manifest describes",
        )
    if mismatches:
        return replace(
            result,
            summary=f"Not written: the artifact does not fit the {env.name} fleet; recompile for it "
            f"(cdk-neuron compile --env {env.name}) or change the fleet",
        )
    relative = manifest_path or f"{DEFAULT_MANIFEST_DIR}/{env.name}/{MANIFEST_NAME}"
    target = cdk_json.parent / relative
    values: dict[str, object] = {"artifact_uri": manifest.artifact_uri, "artifact_manifest": relative}
    if serving.model.artifact_uri == manifest.artifact_uri and target.exists() and target.read_text() == text:
        return replace(result, summary=f"{env.name} already serves {manifest.artifact_uri}: nothing to write")
    changes = [f"{target}: a copy of {where}"] + [
        f"environments.{env.name}.serving.model.{k}: {json.dumps(v)}" for k, v in values.items()
    ]
    if dry_run:
        return replace(
            result,
            changes=changes,
            cdk_json=str(cdk_json),
            manifest_path=str(target),
            summary="Dry run: nothing written; run again without --dry-run to write it",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    write_cdk_json(cdk_json, env.name, values)
    return replace(
        result,
        written=True,
        changes=changes,
        cdk_json=str(cdk_json),
        manifest_path=str(target),
        summary=(
            f"{env.name} will serve {manifest.artifact_uri}: review the diff, make synth, then cdk-neuron impact "
            "shows the rollout (no capacity drop; the old prefix is kept and keeps its readers until clean-up)"
        ),
    )


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    parser.add_argument(
        "manifest",
        metavar="MANIFEST",
        help=f"the artifact's {MANIFEST_NAME}: a local file, the artifact prefix s3://bucket/prefix/, or its S3 URI",
    )
    parser.add_argument(
        "--manifest-path",
        help=f"where to keep the copy, relative to cdk.json (default: {DEFAULT_MANIFEST_DIR}/<env>/{MANIFEST_NAME})",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check and show what would be written; write nothing"
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="also read every file the manifest lists from the artifact prefix and compare its size and SHA-256 "
        "(reads the whole artifact once; exit 1 naming each file that differs)",
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    env = in_region([one_environment(ctx.deployments, args)], args.region)[0]
    if args.manifest_path is not None and (
        Path(args.manifest_path).is_absolute() or ".." in Path(args.manifest_path).parts
    ):
        raise NeuronConfigError(
            "--manifest-path", args.manifest_path, "give a path inside the app, relative to cdk.json"
        )
    cdk_json = Path(ctx.sources.config or Path(ctx.cwd or ".") / "cdk.json")
    result = use_artifact(
        ctx,
        env,
        args.manifest,
        cdk_json=cdk_json,
        manifest_path=args.manifest_path,
        dry_run=args.dry_run,
        verify=args.verify,
    )
    ctx.show(result, render)
    return ExitStatus.FAILED if result.mismatches else ExitStatus.OK


COMMAND = Command(
    "use-artifact",
    "Serve a compiled artifact: check its manifest against the fleet and write it into cdk.json (--dry-run to only check).",
    _run,
    arguments=_arguments,
    aws=True,
    epilog=(
        "MANIFEST is a local cdk-neuron-artifact.json or an S3 URI (the artifact prefix or the manifest). "
        "Writes serving.model.artifact_uri and serving.model.artifact_manifest (a copy of the manifest under "
        "artifacts/<env>/) for --env; then make synth and cdk-neuron impact."
    ),
)

__all__ = [
    "COMMAND",
    "UseArtifact",
    "read_manifest",
    "render",
    "set_values",
    "use_artifact",
    "verify_files",
    "write_cdk_json",
]
