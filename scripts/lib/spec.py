"""Reads openapi.yaml and asyncapi.yaml for the spec tests (Tests/RoostServerTests/APISpecTests).

  spec.py operations ROOT         prints the JSON list of "METHOD /path" openapi.yaml describes
  spec.py check ROOT              checks both files: versions, every $ref resolves, one event list;
                                  prints a JSON summary
  spec.py frames ROOT FILE        validates each JSON stream frame in FILE (one per line) against
                                  asyncapi.yaml's message of its `type`; prints the JSON list of
                                  problems (empty when every frame conforms)

Needs PyYAML and jsonschema (scripts/requirements/tools.txt).
"""
import json
import os
import sys
from pathlib import Path

import jsonschema
import referencing
import yaml

BASE = "https://roost.invalid/"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def load(root):
    return {name: yaml.safe_load(open(os.path.join(root, name))) for name in ("openapi.yaml", "asyncapi.yaml")}


def operations(documents):
    return sorted(f"{method.upper()} {path}" for path, item in documents["openapi.yaml"]["paths"].items()
                  for method in item if method in METHODS)


def pointer(document, fragment):
    node = document
    for part in fragment.lstrip("/").split("/") if fragment else []:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def references(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from references(value)
    elif isinstance(node, list):
        for value in node:
            yield from references(value)


def check(documents):
    unresolved = []
    for name, document in documents.items():
        for ref in references(document):
            target, _, fragment = ref.partition("#")
            try:
                pointer(documents[target or name], fragment)
            except (KeyError, IndexError, TypeError):
                unresolved.append(f"{name}: {ref}")
    openapi, asyncapi = documents["openapi.yaml"], documents["asyncapi.yaml"]
    operation_ids = [operation["operationId"] for item in openapi["paths"].values()
                     for method, operation in item.items() if method in METHODS]
    return {
        "openapi": openapi["openapi"],
        "asyncapi": asyncapi["asyncapi"],
        "unresolved": unresolved,
        "duplicate_operation_ids": sorted({i for i in operation_ids if operation_ids.count(i) > 1}),
        "events_agree": asyncapi["components"]["schemas"]["EventName"]["enum"]
        == openapi["components"]["schemas"]["Event"]["properties"]["event"]["enum"],
        "stream_messages": sorted(asyncapi["channels"]["stream"]["messages"]),
    }


def frames(documents, path):
    registry = referencing.Registry().with_resources(
        (BASE + name, referencing.Resource.from_contents(document, default_specification=referencing.jsonschema.DRAFT202012))
        for name, document in documents.items())
    messages = documents["asyncapi.yaml"]["components"]["messages"]
    problems = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        frame = json.loads(line)
        kind = frame.get("type")
        if kind not in messages:
            problems.append(f"frame {number}: no message {kind!r} in asyncapi.yaml")
            continue
        schema = {"$ref": f"{BASE}asyncapi.yaml#/components/messages/{kind}/payload"}
        validator = jsonschema.Draft202012Validator(schema, registry=registry,
                                                    format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        for error in validator.iter_errors(frame):
            problems.append(f"frame {number} ({kind} {frame.get('event', '')}): {error.message} at {list(error.absolute_path)}")
    return problems


def main():
    command, root = sys.argv[1], sys.argv[2]
    documents = load(root)
    if command == "operations":
        print(json.dumps(operations(documents)))
    elif command == "check":
        print(json.dumps(check(documents)))
    elif command == "frames":
        print(json.dumps(frames(documents, sys.argv[3])))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
