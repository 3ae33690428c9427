-- wrk script of the gateway benchmark (docs/BENCHMARKS.md, "Gateway"): POST /v1/embeddings
-- with one short input, on every keep-alive connection.
--   wrk -t2 -c8 -d20s -s bench/wrk_embeddings.lua http://127.0.0.1:8080/v1/embeddings
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"input": "What is the capital of France?", "encoding_format": "float"}'
