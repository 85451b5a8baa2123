"""``GET /_/health``: the liveness check a load balancer probes, without a token."""


def test_health_answers_without_a_token_or_our_host_name(client):
    for headers in ({}, {"Host": "10.0.0.7:8080"}):
        answer = client.get("/_/health", headers=headers)
        assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-store"
        assert answer.get_json() == {"status": "ok", "storage": "fs", "shared": "sqlite"}
    assert client.head("/_/health").status_code == 200
    assert client.post("/_/health").status_code == 405
