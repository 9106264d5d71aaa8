# The example bridge adapters of examples/ (Home Assistant, camera webhooks): Python's standard
# library only, an unprivileged user, and the on-disk queue on a volume so that an alarm
# waiting for Roost survives the container's restart (docs/BRIDGES.md "Adapters").
#   docker build -f docker/bridges.Dockerfile -t roost-bridges .
#   docker run -e ROOST_URL=https://watch.example.org -e ROOST_BRIDGE_KEY=rbk_... \
#     -v roost-bridge:/var/lib/roost-bridge -p 127.0.0.1:8765:8765 roost-bridges
FROM debian:bookworm-slim AS run
RUN apt-get update && apt-get install -y --no-install-recommends python3 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home-dir /var/lib/roost-bridge --shell /usr/sbin/nologin roost-bridge \
    && mkdir -p /var/lib/roost-bridge && chown roost-bridge /var/lib/roost-bridge
COPY examples/lib /opt/roost-bridges/lib
COPY examples/home-assistant /opt/roost-bridges/home-assistant
COPY examples/camera-webhook /opt/roost-bridges/camera-webhook
USER roost-bridge
ENV ROOST_QUEUE_DIR=/var/lib/roost-bridge ADAPTER_LISTEN=0.0.0.0:8765 ROOST_HEARTBEAT_S=60
VOLUME /var/lib/roost-bridge
EXPOSE 8765
ENTRYPOINT ["python3"]
CMD ["/opt/roost-bridges/home-assistant/roost_ha_bridge.py"]
