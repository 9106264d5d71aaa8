// libFuzzer target for MQTTReader. Compiled together with RoostProtocol's sources by
// scripts/fuzz. The first byte picks the packet size limit and whether the connection speaks
// 3.1.1 or 5 after its CONNECT. Checks that no input traps and that feeding whole, in two
// pieces and byte by byte all give the same packets and the same failure.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMQTTReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    let limit = 8 + Int(first & 0x7F) * 16
    let whole = drain(input, pieces: [input.count], limit: limit)
    let split = input.isEmpty ? 0 : Int(first) % (input.count + 1)
    precondition(whole == drain(input, pieces: [split, input.count - split], limit: limit), "split at \(split) changed the result")
    precondition(whole == drain(input, pieces: Array(repeating: 1, count: input.count), limit: limit), "byte feeding changed the result")
    // What the server answers to what was read is well-formed: its first byte names a packet
    // a server sends and its length field matches the bytes that follow.
    for case .packet(let packet) in whole {
        guard case .connect(let connect) = packet else { continue }
        for answer in [MQTTWriter.connack(level: connect.level, code: 0, limits: .init(maxPacketSize: limit, receiveMaximum: 16)),
                       MQTTWriter.puback(7, level: connect.level, code: 0x99), MQTTWriter.suback(1, topics: 3, level: connect.level)] {
            precondition(answer.count >= 2 && answer.count - 2 == Int(answer[1]), "an answer's length field is wrong")
        }
    }
    return 0
}

private enum Result: Equatable {
    case packet(MQTT.Packet)
    case failure(MQTT.Failure)
}

private func drain(_ input: [UInt8], pieces: [Int], limit: Int) -> [Result] {
    var reader = MQTTReader(maxPacketSize: limit)
    var level: MQTT.Level?
    var results: [Result] = []
    var offset = 0
    for piece in pieces {
        reader.append(input[offset..<(offset + piece)])
        offset += piece
        do {
            while let packet = try reader.next(level: level) {
                if case .connect(let connect) = packet { level = connect.level }
                results.append(.packet(packet))
            }
        } catch {
            results.append(.failure(error))
            return results
        }
    }
    return results
}
