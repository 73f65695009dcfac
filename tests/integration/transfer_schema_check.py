#!/usr/bin/env python3
"""Check JSON-lines events against schemas/events/<event>.schema.json.

    transfer_schema_check.py SCHEMAS_DIR FILE...

Exits 0 when every event is valid, 1 with the first error otherwise, 77
when the jsonschema package is not installed (the caller skips the check).
"""
import json
import pathlib
import sys

try:
    import jsonschema
    from referencing import Registry, Resource
except ImportError:
    sys.exit(77)

base = pathlib.Path(sys.argv[1])
registry = Registry()
for p in list(base.glob("*.json")) + list(base.glob("events/*.json")):
    schema = json.loads(p.read_text())
    registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
count = 0
for name in sys.argv[2:]:
    for n, line in enumerate(open(name), 1):
        event = json.loads(line)
        path = base / "events" / (event["event"] + ".schema.json")
        schema = json.loads(path.read_text())
        try:
            jsonschema.Draft202012Validator(schema, registry=registry).validate(event)
        except jsonschema.ValidationError as e:
            print(f"{name}:{n}: {event['event']}: {e.message} at {list(e.absolute_path)}")
            sys.exit(1)
        count += 1
print(f"{count} events valid")
