# The stamen image of deploy/kubernetes/ (`image: stamen:latest`): CPU only, runs anywhere.
#   docker build -t stamen:latest .
#   docker run -p 8080:8080 -v /path/to/all-MiniLM-L6-v2:/models/all-MiniLM-L6-v2:ro stamen:latest \
#     serve --host 0.0.0.0 --model /models/all-MiniLM-L6-v2
# For `--device cuda` see Dockerfile.cuda. Both stages are checked without Docker by
# `scripts/fresh_check.sh --image` (docs/RELIABILITY.md, "Runtime image").

# Builder: the project's own set-up and build, as on a fresh Debian 12 machine (README).
FROM debian:12 AS builder
COPY . /src
WORKDIR /src
# setup.sh also makes the test virtualenv (.venv); it stays in this stage and costs a minute.
# The CPU image is built without the CUDA backend: a CUDA build needs libcudart and libcublasLt
# at load time, even on a machine without a GPU. debian:12 has no nvcc, so AUTO would give the
# same; OFF makes it a decision rather than an accident, and the ldd line proves it. Only the
# `stamen` target: the tests and benchmarks are not shipped.
RUN scripts/setup.sh \
 && cmake --preset release -DSTAMEN_CUDA=OFF \
 && scripts/build.sh release --target stamen stamen-gateway \
 && ! ldd build/release/apps/stamen | grep -E 'libcudart|libcublas|not found'

# Runtime: the binary, the Debian packages it links (scripts/runtime-packages.txt, the list
# that scripts/fresh_check.sh --runtime and --image check) and a non-root user. No -dev
# packages, no compilers.
FROM debian:12-slim
COPY scripts/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(sed 's/#.*//' /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
# A numeric USER, so that Kubernetes' runAsNonRoot can verify it. /models is the hub cache
# (HF_HOME, as in the manifests) and the place to mount model folders; owned by the user so that
# a named volume there is writable for `--model org/name` downloads.
RUN useradd --create-home --uid 10001 stamen \
 && mkdir /models && chown stamen:stamen /models
COPY --from=builder /src/build/release/apps/stamen /usr/local/bin/stamen
# `stamen gateway` alone, without the engine (deploy/kubernetes/'s gateway pods run it).
COPY --from=builder /src/build/release/apps/stamen-gateway /usr/local/bin/stamen-gateway
# The tokenizers that ship with stamen (make-model's defaults), where the binary looks for them:
# ../share/stamen beside it, as `cmake --install` lays them out. 7.6 MB.
COPY --from=builder /src/build/release/share/stamen /usr/local/share/stamen
RUN ! ldd /usr/local/bin/stamen /usr/local/bin/stamen-gateway | grep 'not found'
ENV HF_HOME=/models
USER 10001
WORKDIR /home/stamen
# HTTP (serve, gateway); a worker listens for gRPC on --listen (50051 in the manifests).
EXPOSE 8080
ENTRYPOINT ["stamen"]
# The model comes from MODEL_ID (e.g. -e MODEL_ID=sentence-transformers/all-MiniLM-L6-v2) or from
# arguments, which replace this whole line: then give --host 0.0.0.0 again (the default is
# loopback, unreachable from outside the container).
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
