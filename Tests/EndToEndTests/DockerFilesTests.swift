import Foundation
import RoostTestSupport
import Testing

/// No Docker engine runs here, so the container files are checked for what can be checked
/// without one: the Dockerfile's stages, base images and copied paths, and the compose file
/// parsed as YAML with the services, health checks and files it relies on.
struct DockerFilesTests {
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()

    @Test func theDockerfileBuildsInTheSwiftImageAndRunsSlimAsAnUnprivilegedUser() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docker/Dockerfile"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") }
        let stages = lines.filter { $0.hasPrefix("FROM ") }
        #expect(stages.count == 2)
        #expect(stages.first?.hasPrefix("FROM swift:") == true && stages.first?.hasSuffix(" AS build") == true)
        #expect(stages.last == "FROM debian:bookworm-slim AS run")
        // Every path copied from the build context exists in the repository.
        for line in lines where line.hasPrefix("COPY ") && !line.contains("--from=") {
            let source = String(line.split(separator: " ")[1])
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(source).path), "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("COPY --from=build /out/roost ") })
        #expect(text.contains("libpq5") && text.contains("libssl3"))
        #expect(lines.contains { $0.hasPrefix("USER ") && !$0.hasSuffix(" root") })
        #expect(text.contains("HEALTHCHECK") && text.contains("/healthz"))
        #expect(text.contains("ROOST_MIGRATIONS_DIR=/usr/share/roost/sql"))
    }

    @Test func theBridgesImageCopiesTheAdaptersAndKeepsTheirQueueOnAVolume() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docker/bridges.Dockerfile"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") }
        for line in lines where line.hasPrefix("COPY ") {
            let source = String(line.split(separator: " ")[1])
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(source).path), "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("USER ") && !$0.hasSuffix(" root") })
        #expect(lines.contains("VOLUME /var/lib/roost-bridge") && text.contains("ROOST_QUEUE_DIR=/var/lib/roost-bridge"))
        let unit = try String(contentsOf: Self.root.appendingPathComponent("examples/systemd/roost-bridge@.service"), encoding: .utf8)
        #expect(unit.contains("StateDirectory=roost-bridge/%i") && unit.contains("Restart=always") && unit.contains("DynamicUser=yes"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs /usr/bin/python3 (with PyYAML)"))
    func theComposeFileParsesAndWiresTheServices() async throws {
        let script = """
            import json, os, sys, yaml
            compose = yaml.safe_load(open(sys.argv[1]))
            services = compose["services"]
            base = os.path.dirname(sys.argv[1])
            roost = services["roost"]
            print(json.dumps({
                "services": sorted(services),
                "postgres_image": services["postgres"]["image"],
                "postgres_healthcheck": "healthcheck" in services["postgres"],
                "roost_waits_for_healthy": roost["depends_on"]["postgres"]["condition"],
                "dockerfile_exists": os.path.exists(os.path.join(base, roost["build"]["context"], roost["build"]["dockerfile"])),
                "caddy_profiles": services["caddy"].get("profiles"),
                "mounted_files_exist": all(os.path.exists(os.path.join(base, v.split(":")[0]))
                                           for s in services.values() for v in s.get("volumes", []) if v.startswith("./")),
                "volumes": sorted(compose["volumes"]),
                "roost_role": roost["environment"]["DATABASE_URL"].split("://")[1].split(":")[0],
                "migration_role": roost["environment"]["ROOST_MIGRATION_DATABASE_URL"].split("://")[1].split(":")[0],
                "init_creates": open(os.path.join(base, "postgres-init/01-roost-role.sh")).read(),
                "trusted_proxies": roost["environment"].get("ROOST_TRUSTED_PROXIES", ""),
                "metrics_listen": roost["environment"].get("ROOST_METRICS_LISTEN", ""),
                "metrics_published": any("9090" in p for p in roost.get("ports", [])),
                "roost_healthcheck": roost.get("healthcheck", {}).get("test", []),
                "prometheus_profiles": services["prometheus"].get("profiles"),
                "scrape_targets": yaml.safe_load(open(os.path.join(base, "prometheus.yml")))["scrape_configs"][0]["static_configs"][0]["targets"],
                "caddy_address": services["caddy"]["networks"]["roost"]["ipv4_address"],
                "subnet": compose["networks"]["roost"]["ipam"]["config"][0]["subnet"],
                "mqtt_listen": roost["environment"].get("ROOST_MQTT_LISTEN", ""),
                "mqtt_published": any("1883" in p for p in roost.get("ports", [])),
                "dc09_listen": roost["environment"].get("ROOST_DC09_LISTEN", ""),
                "mqtt_tls": services["mqtt-tls"]["profiles"] + services["mqtt-tls"]["ports"],
                "nginx_passes_to": [line.split()[1].rstrip(";") for line in open(os.path.join(base, "nginx-mqtt.conf")) if line.strip().startswith("proxy_pass")],
                "bridges_dockerfile_exists": os.path.exists(os.path.join(base, services["bridges"]["build"]["context"], services["bridges"]["build"]["dockerfile"])),
                "bridges_queue": services["bridges"]["volumes"],
            }))
            """
        let outcome = try await Subprocess.run("/usr/bin/python3", ["-c", script, Self.root.appendingPathComponent("docker/compose.yaml").path])
        #expect(outcome.status == 0, "\(outcome.output)")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any])
        #expect(parsed["services"] as? [String] == ["bridges", "caddy", "mqtt-tls", "postgres", "prometheus", "roost"])
        // MQTT inside the network only, TLS in front on 8883 (the mqtt profile); the adapters keep their queue on a volume.
        #expect(parsed["mqtt_listen"] as? String == "0.0.0.0:1883" && parsed["mqtt_published"] as? Bool == false)
        // Alarm panels only when the operator says where (and publishes that port).
        #expect(parsed["dc09_listen"] as? String == "${ROOST_DC09_LISTEN:-off}")
        #expect(parsed["mqtt_tls"] as? [String] == ["mqtt", "8883:8883"] && parsed["nginx_passes_to"] as? [String] == ["roost:1883"])
        #expect(parsed["bridges_dockerfile_exists"] as? Bool == true && parsed["bridges_queue"] as? [String] == ["bridge_queue:/var/lib/roost-bridge"])
        // Metrics stay inside the network, where the monitoring profile scrapes them; health is readiness.
        #expect(parsed["metrics_listen"] as? String == "0.0.0.0:9090" && parsed["metrics_published"] as? Bool == false)
        #expect(parsed["scrape_targets"] as? [String] == ["roost:9090"] && parsed["prometheus_profiles"] as? [String] == ["monitoring"])
        #expect((parsed["roost_healthcheck"] as? [String])?.last == "http://127.0.0.1:8080/readyz")
        #expect((parsed["postgres_image"] as? String)?.hasPrefix("postgres:15") == true)
        #expect(parsed["postgres_healthcheck"] as? Bool == true)
        #expect(parsed["roost_waits_for_healthy"] as? String == "service_healthy")
        #expect(parsed["dockerfile_exists"] as? Bool == true)
        #expect(parsed["caddy_profiles"] as? [String] == ["tls"])
        #expect(parsed["mounted_files_exist"] as? Bool == true)
        #expect(parsed["volumes"] as? [String] == ["bridge_queue", "caddy_data", "pgdata"])
        // The server serves as a role that owns nothing; the owner migrates; the init script makes both.
        #expect(parsed["roost_role"] as? String == "roost_app" && parsed["migration_role"] as? String == "roost")
        // Behind the shipped proxy every client is told apart: Roost trusts exactly Caddy's fixed address.
        #expect(parsed["trusted_proxies"] as? String == "${ROOST_TRUSTED_PROXIES:-\(parsed["caddy_address"] as? String ?? "?")}")
        #expect((parsed["caddy_address"] as? String)?.hasPrefix("172.30.80.") == true && parsed["subnet"] as? String == "172.30.80.0/24")
        let initScript = parsed["init_creates"] as? String ?? ""
        #expect(initScript.contains("CREATE ROLE roost_app") && initScript.contains("CREATE DATABASE roost OWNER roost"))
    }
}
