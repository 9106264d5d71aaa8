"""The few API calls scripts/backup-test makes, through Roost's real HTTP API.

    backup_api.py setup URL                    a tenant, a user and their group: prints "TOKEN GROUP"
    backup_api.py post URL TOKEN GROUP TEXT    posts TEXT to the group (201 expected)
    backup_api.py texts URL TOKEN GROUP        the group's messages' texts, oldest first, one a line
"""

import json
import secrets
import sys
import urllib.request
import uuid

OPERATOR = "backup-test-operator-token-0123456789abcdef"


def call(base, method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, method=method, data=data,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def main(argv):
    command, base = argv[1], argv[2]
    if command == "setup":
        slug = "backup-" + secrets.token_hex(4)
        call(base, "POST", "/v1/admin/tenants", {"slug": slug, "name": "Backup Street", "registration": "open"}, OPERATOR)
        user = call(base, "POST", "/v1/auth/register",
                    {"tenant": slug, "email": "ann@example.org", "password": "a long enough password", "display_name": "Ann"})
        group = call(base, "POST", "/v1/groups", {"name": "Backup Street"}, user["token"])
        print(user["token"], group["id"])
    elif command == "post":
        token, group, text = argv[3], argv[4], argv[5]
        call(base, "POST", f"/v1/groups/{group}/messages", {"client_msg_id": str(uuid.uuid4()), "kind": "chat", "text": text}, token)
    elif command == "texts":
        token, group = argv[3], argv[4]
        page = call(base, "GET", f"/v1/groups/{group}/messages?limit=200", token=token)
        for item in reversed(page["items"]):
            print(item["text"])
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
