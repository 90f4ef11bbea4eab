import Foundation
import Testing
import IAPRoles
import IAPWire

/// Reads a hex fixture of IAPWireTests (`#` comments, `<` device / `>` accessory markers).
private func fixtureLines(_ name: String) throws -> [(marker: Character?, bytes: [UInt8])] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../IAPWireTests/Fixtures/public").appendingPathComponent(name)
    let text = try String(contentsOf: url, encoding: .utf8)
    return text.split(separator: "\n").compactMap { raw in
        var line = String(raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        line = line.trimmingCharacters(in: .whitespaces)
        guard !line.isEmpty else { return nil }
        var marker: Character?
        if line.first == ">" || line.first == "<" {
            marker = line.first
            line.removeFirst()
        }
        return (marker, line.split(separator: " ").map { UInt8($0, radix: 16)! })
    }
}

private func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8 &+ seed) }
}

private func setup(_ id: UInt8, size: UInt64, type: UInt16? = 2) -> FileTransferDatagram {
    var body: [UInt8] = []
    body.appendBigEndian(size)
    if let type { body.append(0); body.appendBigEndian(type) }
    return FileTransferDatagram(transferID: id, control: .setup, body: body)
}

private func sends(_ outputs: [FileTransferReceiver.Output]) -> [FileTransferDatagram] {
    outputs.compactMap { if case .send(let datagram) = $0 { datagram } else { nil } }
}

/// One sender against one receiver, every datagram encoded and decoded on the way.
private struct Exchange {
    var sender: FileTransferSender
    var receiver: FileTransferReceiver
    var dataDatagrams: [FileTransferDatagram] = []
    var completed: [FileTransferReceiver.Output] = []

    /// Delivers datagrams both ways until neither end has anything to say.
    mutating func run(first: [FileTransferDatagram]) throws {
        var toReceiver = first
        var rounds = 0
        while !toReceiver.isEmpty {
            rounds += 1
            try #require(rounds < 100)
            var toSender: [FileTransferDatagram] = []
            for datagram in toReceiver {
                if datagram.control.carriesData { dataDatagrams.append(datagram) }
                for output in try receiver.receive(encoded: datagram.encoded()) {
                    if case .send(let reply) = output { toSender.append(reply) } else { completed.append(output) }
                }
            }
            toReceiver = []
            for datagram in toSender {
                let decoded = try FileTransferDatagram(decoding: datagram.encoded())
                toReceiver += try sender.handle(.received(decoded)).datagrams
            }
        }
    }
}

@Suite struct FileTransferTests {
    @Test(arguments: [1, 2, 3, 16, 255, 1000, 4096])
    func roundTrips(chunk: Int) throws {
        for size in Set([0, 1, chunk - 1, chunk, chunk + 1, 100 * 1024]).sorted() {
            let file = pattern(size, seed: chunk)
            var exchange = Exchange(
                sender: try FileTransferSender(transferID: 9, file: file, maximumDataPerDatagram: chunk),
                receiver: FileTransferReceiver(limits: .init(maximumConcurrentTransfers: 1, maximumFileSize: 100 * 1024)))
            try exchange.run(first: [exchange.sender.start()])
            #expect(exchange.sender.state == .finished, "size \(size)")
            #expect(exchange.completed == [.completed(transferID: 9, bytes: file, fileType: 2)], "size \(size)")
            #expect(exchange.receiver.activeTransferIDs.isEmpty)

            // The split: one FirstAndOnlyData, or FirstData, Data…, LastData; full chunks but the last.
            let data = exchange.dataDatagrams
            #expect(data.count == max(1, (size + chunk - 1) / chunk), "size \(size)")
            #expect(data.allSatisfy { $0.transferID == 9 && $0.body.count <= chunk })
            #expect(data.dropLast().allSatisfy { $0.body.count == chunk })
            let controls = data.map(\.control)
            if data.count == 1 {
                #expect(controls == [.firstAndOnlyData])
            } else {
                #expect(controls.first == .firstData && controls.last == .lastData)
                #expect(controls.dropFirst().dropLast().allSatisfy { $0 == .data })
            }
        }
    }

    @Test func nocturneVector() throws {
        let lines = try fixtureLines("nocturne-file-transfer-first-and-only.hex")
        #expect(lines.map(\.marker) == ["<", ">", "<", ">"])

        // Our receiver answers the device's datagrams as nocturne's test expects: Start, then Success.
        var receiver = FileTransferReceiver()
        var replies: [[UInt8]] = []
        var completed: [FileTransferReceiver.Output] = []
        for line in lines where line.marker == "<" {
            for output in try receiver.receive(encoded: line.bytes) {
                if case .send(let datagram) = output { replies.append(datagram.encoded()) } else { completed.append(output) }
            }
        }
        #expect(replies == lines.filter { $0.marker == ">" }.map(\.bytes))
        #expect(completed == [.completed(transferID: 7, bytes: Array("hello".utf8), fileType: FileTransferFileType.artwork)])

        // Our sender produces the device's datagrams byte for byte.
        var sender = try FileTransferSender(transferID: 7, file: Array("hello".utf8), maximumDataPerDatagram: 64)
        #expect(try sender.start().encoded() == lines[0].bytes)
        let data = try sender.handle(.received(FileTransferDatagram(decoding: lines[1].bytes)))
        #expect(data.datagrams.map { $0.encoded() } == [lines[2].bytes])
        #expect(try sender.handle(.received(FileTransferDatagram(decoding: lines[3].bytes))).state == .finished)
    }

    @Test func setupShapes() throws {
        var receiver = FileTransferReceiver()
        // [u64 size] alone, and nocturne's 10-byte [u64 size][u16 type].
        #expect(sends(try receiver.receive(setup(1, size: 2, type: nil))) == [FileTransferDatagram(transferID: 1, control: .start)])
        #expect(try receiver.receive(FileTransferDatagram(transferID: 1, control: .firstAndOnlyData, body: [1, 2])).last
                == .completed(transferID: 1, bytes: [1, 2], fileType: nil))
        let tenBytes = FileTransferDatagram(transferID: 2, control: .setup, body: [0, 0, 0, 0, 0, 0, 0, 1, 0, 5])
        #expect(sends(try receiver.receive(tenBytes)).map(\.control) == [.start])
        #expect(try receiver.receive(FileTransferDatagram(transferID: 2, control: .firstAndOnlyData, body: [7])).last
                == .completed(transferID: 2, bytes: [7], fileType: 5))
        // Any other length is refused.
        let nineBytes = FileTransferDatagram(transferID: 3, control: .setup, body: [0, 0, 0, 0, 0, 0, 0, 1, 0])
        #expect(try receiver.receive(nineBytes) == [
            .send(FileTransferDatagram(transferID: 3, control: .cancel)),
            .cancelled(transferID: 3, reason: .malformedSetup(argumentBytes: 9)),
        ])
        // A sender without a type sends the 8-byte Setup.
        var sender = try FileTransferSender(transferID: 4, file: [1, 2, 3], fileType: nil, maximumDataPerDatagram: 8)
        #expect(try sender.start().body == [0, 0, 0, 0, 0, 0, 0, 3])
    }

    @Test func oversizeSetupRefused() throws {
        var receiver = FileTransferReceiver(limits: .init(maximumConcurrentTransfers: 2, maximumFileSize: 1000))
        #expect(sends(try receiver.receive(setup(1, size: 1000))).map(\.control) == [.start])
        #expect(try receiver.receive(setup(2, size: 1001)) == [
            .send(FileTransferDatagram(transferID: 2, control: .cancel)),
            .cancelled(transferID: 2, reason: .fileTooLarge(announced: 1001, limit: 1000)),
        ])
        #expect(try receiver.receive(setup(3, size: .max)).last == .cancelled(transferID: 3, reason: .fileTooLarge(announced: .max, limit: 1000)))
        // Data already on the wire for a refused transfer is dropped quietly.
        #expect(try receiver.receive(FileTransferDatagram(transferID: 2, control: .firstData, body: [1])) == [])
        #expect(receiver.activeTransferIDs == [1])

        // The concurrency bound.
        #expect(sends(try receiver.receive(setup(4, size: 10))).map(\.control) == [.start])
        #expect(try receiver.receive(setup(5, size: 10)).last == .cancelled(transferID: 5, reason: .tooManyTransfers(limit: 2)))
        #expect(receiver.activeTransferIDs == [1, 4])
        #expect(receiver.progress(of: 4)! == (0, 10))
    }

    @Test func byteCountMismatchCancels() throws {
        var receiver = FileTransferReceiver()
        let cancel = { (id: UInt8) in FileTransferReceiver.Output.send(FileTransferDatagram(transferID: id, control: .cancel)) }

        // Too few: the only datagram is short.
        _ = try receiver.receive(setup(1, size: 10))
        #expect(try receiver.receive(FileTransferDatagram(transferID: 1, control: .firstAndOnlyData, body: [1, 2, 3])) ==
                [cancel(1), .cancelled(transferID: 1, reason: .tooFewBytes(announced: 10, received: 3))])

        // Too few: LastData before the announced size.
        _ = try receiver.receive(setup(2, size: 6))
        #expect(try receiver.receive(FileTransferDatagram(transferID: 2, control: .firstData, body: [1, 2])) == [])
        #expect(receiver.progress(of: 2)! == (2, 6))
        #expect(try receiver.receive(FileTransferDatagram(transferID: 2, control: .lastData, body: [3])) ==
                [cancel(2), .cancelled(transferID: 2, reason: .tooFewBytes(announced: 6, received: 3))])

        // Too many: cancelled as soon as a datagram passes the announced size.
        _ = try receiver.receive(setup(3, size: 4))
        #expect(try receiver.receive(FileTransferDatagram(transferID: 3, control: .firstData, body: [1, 2, 3])) == [])
        #expect(try receiver.receive(FileTransferDatagram(transferID: 3, control: .data, body: [4, 5])) ==
                [cancel(3), .cancelled(transferID: 3, reason: .tooManyBytes(announced: 4, received: 5))])
        #expect(try receiver.receive(FileTransferDatagram(transferID: 3, control: .lastData, body: [6])) == [])

        // Out of order: Data before FirstData, FirstData twice.
        _ = try receiver.receive(setup(4, size: 4))
        #expect(try receiver.receive(FileTransferDatagram(transferID: 4, control: .data, body: [1])).last ==
                .cancelled(transferID: 4, reason: .outOfOrder(.data)))
        _ = try receiver.receive(setup(5, size: 4))
        _ = try receiver.receive(FileTransferDatagram(transferID: 5, control: .firstData, body: [1]))
        #expect(try receiver.receive(FileTransferDatagram(transferID: 5, control: .firstAndOnlyData, body: [1])).last ==
                .cancelled(transferID: 5, reason: .outOfOrder(.firstAndOnlyData)))
        #expect(receiver.activeTransferIDs.isEmpty)

        // The id is usable again after a new Setup.
        #expect(sends(try receiver.receive(setup(3, size: 1))).map(\.control) == [.start])
        #expect(try receiver.receive(FileTransferDatagram(transferID: 3, control: .firstAndOnlyData, body: [9])).last ==
                .completed(transferID: 3, bytes: [9], fileType: 2))
    }

    @Test func concurrentTransfersInterleaved() throws {
        let files: [UInt8: [UInt8]] = [1: pattern(10_000, seed: 1), 2: pattern(3, seed: 2), 3: pattern(0), 4: pattern(5_000, seed: 4)]
        let chunks: [UInt8: Int] = [1: 100, 2: 1, 3: 50, 4: 333]
        var senders: [UInt8: FileTransferSender] = [:]
        for (id, file) in files {
            senders[id] = try FileTransferSender(transferID: id, file: file, maximumDataPerDatagram: chunks[id]!, maximumDatagramsPerOutput: 7)
        }
        var receiver = FileTransferReceiver(limits: .init(maximumConcurrentTransfers: 4, maximumFileSize: 10_000))
        var pending: [UInt8: [FileTransferDatagram]] = [:]
        for id in files.keys.sorted() { pending[id] = [try senders[id]!.start()] }
        var completed: [UInt8: [UInt8]] = [:]
        var steps = 0
        // Round robin: one datagram per transfer per turn, so the files' data interleave.
        func busy(_ sender: FileTransferSender) -> Bool { if case .sending = sender.state { true } else { false } }
        while pending.values.contains(where: { !$0.isEmpty }) || senders.values.contains(where: busy) {
            steps += 1
            try #require(steps < 10_000)
            for id in files.keys.sorted() {
                if pending[id]!.isEmpty, busy(senders[id]!) {
                    pending[id]! += try senders[id]!.handle(.sendMore).datagrams
                }
                guard !pending[id]!.isEmpty else { continue }
                let datagram = pending[id]!.removeFirst()
                for output in try receiver.receive(encoded: datagram.encoded()) {
                    switch output {
                    case .send(let reply): pending[id]! += try senders[reply.transferID]!.handle(.received(reply)).datagrams
                    case .completed(let done, let bytes, let type):
                        #expect(type == 2)
                        completed[done] = bytes
                    case .cancelled, .paused: Issue.record("unexpected \(output)")
                    }
                }
            }
        }
        #expect(completed.keys.sorted() == files.keys.sorted())
        let same = completed == files  // compared outside #expect, which would print every byte
        #expect(same)
        #expect(senders.values.allSatisfy { $0.state == .finished })
        #expect(receiver.activeTransferIDs.isEmpty)
    }

    @Test func cancelPaths() throws {
        // The sender cancels mid-file: the receiver discards the partial file.
        var sender = try FileTransferSender(transferID: 5, file: pattern(100), maximumDataPerDatagram: 10, maximumDatagramsPerOutput: 3)
        var receiver = FileTransferReceiver()
        let start = sends(try receiver.receive(sender.start()))
        for datagram in try sender.handle(.received(start[0])).datagrams { #expect(try receiver.receive(datagram) == []) }
        #expect(receiver.progress(of: 5)! == (30, 100))
        let cancel = try sender.handle(.cancel)
        #expect(cancel == .init(datagrams: [FileTransferDatagram(transferID: 5, control: .cancel)], state: .cancelled(byPeer: false)))
        #expect(try receiver.receive(cancel.datagrams[0]) == [.cancelled(transferID: 5, reason: .cancelledBySender)])
        #expect(receiver.activeTransferIDs.isEmpty)
        #expect(receiver.progress(of: 5) == nil)
        // A Success or Cancel that crossed ours is ignored; more local actions are errors.
        #expect(try sender.handle(.received(FileTransferDatagram(transferID: 5, control: .cancel))).datagrams == [])
        #expect(throws: FileTransferError.self) { try sender.handle(.cancel) }
        #expect(throws: FileTransferError.self) { try sender.handle(.sendMore) }

        // The receiver cancels: the sender stops, late data is dropped quietly.
        var sender2 = try FileTransferSender(transferID: 6, file: pattern(100), maximumDataPerDatagram: 10, maximumDatagramsPerOutput: 2)
        let start2 = sends(try receiver.receive(sender2.start()))
        let burst = try sender2.handle(.received(start2[0])).datagrams
        _ = try receiver.receive(burst[0])
        let refusal = try receiver.cancel(transferID: 6)
        #expect(refusal == [.send(FileTransferDatagram(transferID: 6, control: .cancel)), .cancelled(transferID: 6, reason: .cancelledByThisEnd)])
        #expect(try receiver.receive(burst[1]) == [])
        #expect(try sender2.handle(.received(sends(refusal)[0])).state == .cancelled(byPeer: true))
        #expect(throws: FileTransferError.unknownTransfer(6)) { try receiver.cancel(transferID: 6) }

        // Cancelling before start() sends nothing.
        var unstarted = try FileTransferSender(transferID: 7, file: [1], maximumDataPerDatagram: 1)
        #expect(try unstarted.handle(.cancel) == .init(datagrams: [], state: .cancelled(byPeer: false)))
    }

    @Test func receiverPausesAndResumesWithStart() throws {
        let file = pattern(95)
        var sender = try FileTransferSender(transferID: 3, file: file, maximumDataPerDatagram: 10, maximumDatagramsPerOutput: 2)
        var receiver = FileTransferReceiver()
        let start = sends(try receiver.receive(sender.start()))
        let first = try sender.handle(.received(start[0]))
        #expect(first.datagrams.map(\.control) == [.firstData, .data])
        #expect(first.state == .sending(sentBytes: 20))
        for datagram in first.datagrams { _ = try receiver.receive(datagram) }

        let pause = sends(try receiver.pause(transferID: 3))
        #expect(pause == [FileTransferDatagram(transferID: 3, control: .pause)])
        #expect(throws: FileTransferError.self) { try receiver.pause(transferID: 3) }
        #expect(try sender.handle(.received(pause[0])).state == .paused(sentBytes: 20, byPeer: true, byThisEnd: false))
        #expect(try sender.handle(.sendMore).datagrams == [])

        // Resume: the receiver sends Start again, the sender continues with Data (no second FirstData).
        let resume = sends(try receiver.resume(transferID: 3))
        #expect(resume == [FileTransferDatagram(transferID: 3, control: .start)])
        var outputs = try sender.handle(.received(resume[0]))
        #expect(outputs.datagrams.map(\.control) == [.data, .data])
        var completed: [FileTransferReceiver.Output] = []
        while true {
            for datagram in outputs.datagrams {
                for output in try receiver.receive(datagram) {
                    if case .send(let reply) = output { outputs = try sender.handle(.received(reply)) } else { completed.append(output) }
                }
            }
            guard case .sending = sender.state else { break }
            outputs = try sender.handle(.sendMore)
        }
        #expect(sender.state == .finished)
        #expect(completed == [.completed(transferID: 3, bytes: file, fileType: 2)])
        #expect(throws: FileTransferError.unknownTransfer(3)) { try receiver.resume(transferID: 3) }
    }

    @Test func senderPausesAndResumes() throws {
        var sender = try FileTransferSender(transferID: 1, file: pattern(30), maximumDataPerDatagram: 10, maximumDatagramsPerOutput: 1)
        var receiver = FileTransferReceiver()
        let start = sends(try receiver.receive(sender.start()))
        let first = try sender.handle(.received(start[0])).datagrams
        _ = try receiver.receive(first[0])
        let pause = try sender.handle(.pause)
        #expect(pause == .init(datagrams: [FileTransferDatagram(transferID: 1, control: .pause)], state: .paused(sentBytes: 10, byPeer: false, byThisEnd: true)))
        #expect(try receiver.receive(pause.datagrams[0]) == [.paused(transferID: 1)])
        #expect(throws: FileTransferError.self) { try sender.handle(.pause) }
        // The receiver pauses too: this end's resume alone does not restart the data.
        _ = try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .pause)))
        #expect(try sender.handle(.resume) == .init(datagrams: [], state: .paused(sentBytes: 10, byPeer: true, byThisEnd: false)))
        let resumed = try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .start)))
        #expect(resumed.datagrams.map(\.control) == [.data])
        _ = try receiver.receive(resumed.datagrams[0])
        let last = try sender.handle(.sendMore)
        #expect(last.datagrams.map(\.control) == [.lastData])
        #expect(last.state == .awaitingSuccess)
        #expect(throws: FileTransferError.self) { try sender.handle(.pause) }  // nothing left to pause

        // A pause after the last data: Start again only returns to waiting for Success.
        #expect(try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .pause))).state == .paused(sentBytes: 30, byPeer: true, byThisEnd: false))
        #expect(try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .start))) == .init(datagrams: [], state: .awaitingSuccess))
        let success = sends(try receiver.receive(last.datagrams[0]))
        #expect(try sender.handle(.received(success[0])).state == .finished)
    }

    @Test func illegalSenderInputs() throws {
        #expect(throws: FileTransferError.invalidConfiguration("maximumDataPerDatagram must be at least 1, got 0")) {
            try FileTransferSender(transferID: 1, file: [1], maximumDataPerDatagram: 0)
        }
        #expect(throws: FileTransferError.self) { try FileTransferSender(transferID: 1, file: [1], maximumDataPerDatagram: 4, maximumDatagramsPerOutput: 0) }

        var sender = try FileTransferSender(transferID: 1, file: pattern(25), maximumDataPerDatagram: 10, maximumDatagramsPerOutput: 1)
        let start = FileTransferDatagram(transferID: 1, control: .start)
        let success = FileTransferDatagram(transferID: 1, control: .success)
        #expect(throws: FileTransferError.notAllowed(transferID: 1, what: "receiving Start", state: "idle")) { try sender.handle(.received(start)) }
        #expect(throws: FileTransferError.self) { try sender.handle(.sendMore) }
        _ = try sender.start()
        #expect(throws: FileTransferError.self) { try sender.start() }
        #expect(throws: FileTransferError.successBeforeAllData(transferID: 1, sentBytes: 0, fileSize: 25)) { try sender.handle(.received(success)) }
        #expect(throws: FileTransferError.unknownTransfer(2)) { try sender.handle(.received(FileTransferDatagram(transferID: 2, control: .start))) }
        #expect(throws: FileTransferError.wrongDirection(transferID: 1, control: .firstData)) {
            try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .firstData, body: [1])))
        }
        #expect(throws: FileTransferError.wrongDirection(transferID: 1, control: .setup)) { try sender.handle(.received(setup(1, size: 1))) }
        #expect(throws: FileTransferError.unknownControl(transferID: 1, control: .init(rawValue: 0x06))) {
            try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .init(rawValue: 0x06))))
        }
        #expect(throws: FileTransferError.self) { try sender.handle(.resume) }
        _ = try sender.handle(.received(start))
        #expect(throws: FileTransferError.self) { try sender.handle(.received(start)) }  // a second Start without a pause
        #expect(throws: FileTransferError.successBeforeAllData(transferID: 1, sentBytes: 10, fileSize: 25)) { try sender.handle(.received(success)) }
        #expect(sender.state == .sending(sentBytes: 10))  // errors change nothing
        _ = try sender.handle(.sendMore)
        _ = try sender.handle(.sendMore)
        #expect(try sender.handle(.received(success)).state == .finished)
        #expect(throws: FileTransferError.self) { try sender.handle(.received(success)) }
        #expect(throws: FileTransferError.self) { try sender.handle(.received(FileTransferDatagram(transferID: 1, control: .cancel))) }
    }

    @Test func illegalReceiverInputs() throws {
        var receiver = FileTransferReceiver()
        #expect(throws: FileTransferError.dataBeforeSetup(transferID: 4, control: .firstAndOnlyData)) {
            try receiver.receive(FileTransferDatagram(transferID: 4, control: .firstAndOnlyData, body: [1]))
        }
        #expect(throws: FileTransferError.wrongDirection(transferID: 4, control: .start)) { try receiver.receive(FileTransferDatagram(transferID: 4, control: .start)) }
        #expect(throws: FileTransferError.wrongDirection(transferID: 4, control: .success)) { try receiver.receive(FileTransferDatagram(transferID: 4, control: .success)) }
        #expect(throws: FileTransferError.unknownControl(transferID: 4, control: .init(rawValue: 0x7F))) {
            try receiver.receive(FileTransferDatagram(transferID: 4, control: .init(rawValue: 0x7F)))
        }
        #expect(throws: FileTransferError.unknownTransfer(4)) { try receiver.receive(FileTransferDatagram(transferID: 4, control: .cancel)) }
        #expect(throws: FileTransferError.unknownTransfer(4)) { try receiver.receive(FileTransferDatagram(transferID: 4, control: .pause)) }
        #expect(throws: FileTransferError.unknownTransfer(4)) { try receiver.pause(transferID: 4) }
        do {
            _ = try receiver.receive(encoded: [4])
            Issue.record("a 1-byte datagram was accepted")
        } catch {
            guard case .malformed(let wire) = error else { Issue.record("unexpected \(error)"); return }
            #expect(wire.kind == .truncated)
            #expect(error.description.contains("transfer id and a control byte"))
        }
        #expect(throws: FileTransferError.self) { try receiver.resume(transferID: 4) }
        _ = try receiver.receive(setup(4, size: 1))
        #expect(throws: FileTransferError.notAllowed(transferID: 4, what: "resuming", state: "not paused by this end")) { try receiver.resume(transferID: 4) }

        // A new Setup for an id in progress replaces that transfer.
        _ = try receiver.receive(FileTransferDatagram(transferID: 4, control: .firstData, body: [1]))
        #expect(try receiver.receive(setup(4, size: 2)) == [
            .cancelled(transferID: 4, reason: .replacedBySetup),
            .send(FileTransferDatagram(transferID: 4, control: .start)),
        ])
        #expect(receiver.progress(of: 4)! == (0, 2))
    }
}
