import Foundation

/// The folders Roost ships beside its binary (`sql/`, `templates/`): in the working directory,
/// in one of the five folders above the executable (a checkout's .build/…/roost), or under
/// /usr/share/roost (the Docker image). The first that holds `marker` wins.
enum ShippedFolder {
    static func find(_ name: String, marker: String) -> URL? {
        let fileManager = FileManager.default
        var candidates = [URL(fileURLWithPath: fileManager.currentDirectoryPath).appendingPathComponent(name)]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(directory.appendingPathComponent(name))
            directory.deleteLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: "/usr/share/roost").appendingPathComponent(name))
        return candidates.first { fileManager.fileExists(atPath: $0.appendingPathComponent(marker).path) }
    }
}
