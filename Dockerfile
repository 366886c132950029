# One image for both processes; choose with the command:
#   docker run … firmsift api --host 0.0.0.0 --port 8000
#   docker run … firmsift worker            (probe on FIRMSIFT_WORKER_PROBE_PORT, default 9101 here)
# Dependencies come from the hash-locked requirements-runtime.lock: the pins CI tested (requirements.lock)
# without the development tools (test runners, emulators, linters).
FROM python:3.11-slim AS build
WORKDIR /src
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/firmsift
COPY requirements-runtime.lock ./
# --no-deps: the lock is installed as written, nothing resolved (a release published after the lock
# cannot enter); pip check proves the pins meet every requirement.
RUN /opt/firmsift/bin/pip install --require-hashes --no-deps -r requirements-runtime.lock \
 && /opt/firmsift/bin/pip check
COPY pyproject.toml README.md ./
COPY src ./src
RUN /opt/firmsift/bin/pip install --no-deps --no-build-isolation . && /opt/firmsift/bin/pip check

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home-dir /var/lib/firmsift --create-home firmsift
COPY --from=build /opt/firmsift /opt/firmsift
ENV PATH=/opt/firmsift/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    FIRMSIFT_WORKER_PROBE_HOST=0.0.0.0 \
    FIRMSIFT_WORKER_PROBE_PORT=9101
USER firmsift
WORKDIR /var/lib/firmsift
EXPOSE 8000 9101
ENTRYPOINT ["firmsift"]
CMD ["api", "--host", "0.0.0.0", "--port", "8000"]
