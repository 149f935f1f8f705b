#!/usr/bin/env python3
"""Checks a .pftrace file with Perfetto's own protobuf bindings.

Usage: scripts/check_pftrace.py FILE [--schema NAME=NUMBER/KIND ...]

The file is parsed as a `perfetto.protos.Trace` by the bindings of the
`perfetto` package on PyPI, so a field number or wire type that differs
from Perfetto's schema fails to parse or shows up as an unknown field.
The script then checks what Perfetto needs to draw the trace, and prints
a canonical JSON summary of it on stdout for a test to compare exactly:
tracks (uuid, name, pid, tid, parent), each track's slices as
[name, begin_ts, end_ts, annotations] in the order they began (an
instant's end_ts is null; each annotation is [type, value]), and flows as
[from slice name, to slice name].

Each `--schema` argument is a number the writer uses (perflens-report's
`SCHEMA_NUMBERS`): `Message.field=NUMBER/WIRE` with WIRE one of varint,
fixed64, len; or `Message.ENUM_VALUE=NUMBER/enum`. Each is compared with
the schema. Any failure is printed on stderr and exits 1.
"""

import json
import sys

from google.protobuf import unknown_fields
from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

# The wire type a reader expects for each declared type. Zigzag types are
# apart: the writer has no zigzag encoding, so they must not match varint.
WIRE = {
    FD.TYPE_INT32: "varint", FD.TYPE_INT64: "varint", FD.TYPE_UINT32: "varint",
    FD.TYPE_UINT64: "varint", FD.TYPE_BOOL: "varint", FD.TYPE_ENUM: "varint",
    FD.TYPE_SINT32: "zigzag", FD.TYPE_SINT64: "zigzag",
    FD.TYPE_FIXED64: "fixed64", FD.TYPE_SFIXED64: "fixed64", FD.TYPE_DOUBLE: "fixed64",
    FD.TYPE_FIXED32: "fixed32", FD.TYPE_SFIXED32: "fixed32", FD.TYPE_FLOAT: "fixed32",
    FD.TYPE_STRING: "len", FD.TYPE_BYTES: "len", FD.TYPE_MESSAGE: "len",
}

SEQ_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
BEGIN, END, INSTANT = (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END,
                       pb.TrackEvent.TYPE_INSTANT)


class Invalid(Exception):
    """The trace or a schema number is wrong; the message says how."""


def check_schema(arg):
    """Compares one `NAME=NUMBER/KIND` the writer uses with the schema."""
    name, _, rest = arg.partition("=")
    number, _, kind = rest.partition("/")
    message, _, member = name.partition(".")
    cls = getattr(pb, message, None)
    if cls is None:
        raise Invalid(f"{name}: no message {message} in the schema")
    if kind == "enum":
        actual = getattr(cls, member, None)
        if actual != int(number):
            raise Invalid(f"{name}: the writer uses {number}, the schema says {actual}")
        return
    field = cls.DESCRIPTOR.fields_by_name.get(member)
    if field is None:
        raise Invalid(f"{name}: no such field in the schema")
    if field.number != int(number):
        raise Invalid(f"{name}: the writer uses field {number}, the schema says {field.number}")
    # A packed repeated field is one length-delimited blob, whatever its type.
    wire = "len" if field.is_packed else WIRE[field.type]
    if wire != kind:
        raise Invalid(f"{name}: the writer writes it as {kind}, the schema declares {wire}")


def no_unknown_fields(msg, where):
    """Fails on any field the schema does not declare, at any depth: the
    bindings keep such fields aside instead of rejecting them."""
    if len(unknown_fields.UnknownFieldSet(msg)):
        raise Invalid(f"{where}: fields unknown to the schema")
    for field, value in msg.ListFields():
        if field.type != FD.TYPE_MESSAGE:
            continue
        for i, sub in enumerate(value if field.is_repeated else [value]):
            no_unknown_fields(sub, f"{where}.{field.name}[{i}]")


def annotation(a):
    """An annotation's value as [type, value]."""
    kind = a.WhichOneof("value")
    if kind not in ("bool_value", "uint_value", "int_value", "string_value"):
        raise Invalid(f"annotation {a.name!r}: unexpected value {kind}")
    return [kind.removesuffix("_value"), getattr(a, kind)]


def summarize(trace):
    """Checks the trace and returns its summary."""
    tracks = {}
    sequence = None
    for i, p in enumerate(trace.packet):
        no_unknown_fields(p, f"packet {i}")
        if i == 0 and not p.sequence_flags & SEQ_CLEARED:
            raise Invalid("the first packet does not clear the sequence's incremental state")
        if sequence is None:
            sequence = p.trusted_packet_sequence_id
        if p.trusted_packet_sequence_id != sequence or sequence == 0:
            raise Invalid(f"packet {i}: sequence id {p.trusted_packet_sequence_id}, expected "
                          f"one non-zero id throughout")
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                raise Invalid(f"track {d.uuid} is described twice")
            tracks[d.uuid] = {
                "uuid": d.uuid,
                "name": d.name or d.process.process_name or d.thread.thread_name,
                "pid": d.process.pid if d.HasField("process")
                else d.thread.pid if d.HasField("thread") else None,
                "tid": d.thread.tid if d.HasField("thread") else None,
                "parent": d.parent_uuid if d.HasField("parent_uuid") else None,
            }
    for t in tracks.values():
        if t["parent"] is not None and t["parent"] not in tracks:
            raise Invalid(f"track {t['uuid']}: parent {t['parent']} is not described")

    slices = {}      # track uuid -> slices in the order they began
    open_slices = {}  # track uuid -> stack of slices not yet ended
    last_ts = {}
    flow_from, flow_to = {}, {}
    for i, p in enumerate(trace.packet):
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        uuid = e.track_uuid
        if uuid not in tracks:
            raise Invalid(f"packet {i}: event on track {uuid}, which has no descriptor")
        if p.timestamp < last_ts.get(uuid, 0):
            raise Invalid(f"packet {i}: timestamp {p.timestamp} goes back on track {uuid}")
        last_ts[uuid] = p.timestamp
        stack = open_slices.setdefault(uuid, [])
        if e.type == END:
            if not stack:
                raise Invalid(f"packet {i}: slice end on track {uuid} with no slice open")
            stack.pop()[2] = p.timestamp
            continue
        if e.type not in (BEGIN, INSTANT):
            raise Invalid(f"packet {i}: unexpected event type {e.type}")
        s = [e.name, p.timestamp, None,
             {a.name: annotation(a) for a in e.debug_annotations}]
        slices.setdefault(str(uuid), []).append(s)
        if e.type == BEGIN:
            stack.append(s)
        for ids, ends in ((e.flow_ids, flow_from), (e.terminating_flow_ids, flow_to)):
            for fid in ids:
                if fid in ends:
                    raise Invalid(f"flow {fid} starts or ends twice")
                ends[fid] = e.name
    for uuid, stack in open_slices.items():
        if stack:
            raise Invalid(f"track {uuid}: slice {stack[-1][0]!r} never ends")
    if flow_from.keys() != flow_to.keys():
        raise Invalid(f"flows with one end only: {sorted(flow_from.keys() ^ flow_to.keys())}")
    return {
        "tracks": sorted(tracks.values(), key=lambda t: t["uuid"]),
        "slices": slices,
        "flows": sorted([flow_from[f], flow_to[f]] for f in flow_from),
    }


def canonical(value, depth=0, indent=" "):
    """JSON with sorted keys, one line per track, slice and flow: a
    container is spread over lines at the top, or down to depth 2 when it
    holds containers; anything deeper stays on one line."""
    children = list(value.values()) if isinstance(value, dict) else value
    spread = isinstance(value, (dict, list)) and value and (
        depth == 0 or (depth <= 2 and any(isinstance(v, (dict, list)) for v in children)))
    if not spread:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    pad = indent * (depth + 1)
    if isinstance(value, dict):
        lines = [f"{pad}{json.dumps(k)}: {canonical(v, depth + 1)}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(lines) + "\n" + indent * depth + "}"
    lines = [pad + canonical(v, depth + 1) for v in value]
    return "[\n" + ",\n".join(lines) + "\n" + indent * depth + "]"


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    schema = []
    args = argv[2:]
    while args:
        if args[0] != "--schema" or len(args) < 2:
            print(f"check_pftrace: unexpected argument {args[0]!r}", file=sys.stderr)
            return 2
        schema.append(args[1])
        args = args[2:]
    try:
        for arg in schema:
            check_schema(arg)
        trace = pb.Trace()
        with open(argv[1], "rb") as f:
            trace.ParseFromString(f.read())
        print(canonical(summarize(trace)))
    except (Invalid, DecodeError) as err:
        print(f"check_pftrace: {argv[1]}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
