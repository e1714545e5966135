import json, pytest
from django.test import Client
pytestmark = pytest.mark.django_db
BIG = str(2**70)
def test_probe(tmp_path):
    client = Client(raise_request_exception=False)
    for url, params in [
        ("/api/observations", {"ids": BIG}),
        ("/api/timeline", {"anchor": BIG}),
        ("/api/timeline", {"anchor": "S" + BIG}),
        ("/api/timeline", {"anchor": "P" + BIG}),
        ("/api/timeline", {"q": "x", "depth_before": BIG, "depth_after": BIG}),
        ("/api/timeline", {"q": "x", "depth_before": "-5"}),
        ("/api/search", {"query": "x", "limit": BIG}),
        ("/api/outline/search", {"q": "x", "root": str(tmp_path), "limit": BIG}),
        ("/api/observations/by-file", {"path": "a.py", "limit": BIG}),
        ("/api/ledger", {"days": BIG}),
        ("/api/context", {"project": "x", "limit": BIG}),
        ("/observations/" + BIG + "/", {}),
        ("/sessions/" + BIG + "/", {}),
        ("/deliverables/" + BIG + "/download/", {}),
        ("/", {"page": BIG}),
        ("/stats/", {"days": BIG}),
    ]:
        r = client.get(url, params)
        print(r.status_code, url)
    r = client.post("/api/forget", json.dumps({"ids": [2**64], "dry_run": True}), content_type="application/json")
    print("forget", r.status_code)
