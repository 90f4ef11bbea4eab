import Dispatch
import IAPTransport
import Synchronization
import Testing

/// The in-memory loopback hands bytes over inside `write`, on the writer's
/// thread: handlers that write back or write again must neither deadlock nor
/// overlap, and every end sees its bytes whole, in order, then one close.
@Suite struct LoopbackTests {
    /// What one end's handler saw, and whether two calls ever overlapped.
    final class Recorder: Sendable {
        private let inside = Atomic<Bool>(false)
        private let overlap = Atomic<Bool>(false)
        private let closeCount = Atomic<Int>(0)
        let chunks = Mutex<[[UInt8]]>([])

        var overlapped: Bool { overlap.load(ordering: .sequentiallyConsistent) }
        var closes: Int { closeCount.load(ordering: .sequentiallyConsistent) }

        func enter() { if inside.exchange(true, ordering: .sequentiallyConsistent) { overlap.store(true, ordering: .sequentiallyConsistent) } }
        func leave() { inside.store(false, ordering: .sequentiallyConsistent) }

        func record(_ event: TransportEvent) {
            switch event {
            case .received(let bytes): chunks.withLock { $0.append(bytes) }
            case .closed: closeCount.add(1, ordering: .sequentiallyConsistent)
            }
        }
    }

    static let instant = WireFaults(delay: .zero)

    @Test func handlersThatWriteBackAndWriteAgainRunInOrder() throws {
        let (first, second) = LoopbackTransport.pair(towardsSecond: Self.instant, towardsFirst: Self.instant)
        let atFirst = Recorder()
        let atSecond = Recorder()
        let rounds = 200
        // The second end echoes every chunk from inside its handler (a write
        // the other way); the first end sends the next chunk from inside its
        // handler (a write in the direction being delivered, from a nested call).
        try second.start { event in
            atSecond.enter()
            atSecond.record(event)
            if case .received(let bytes) = event { second.write(bytes) }
            atSecond.leave()
        }
        try first.start { event in
            atFirst.enter()
            atFirst.record(event)
            if case .received(let bytes) = event, Int(bytes[0]) + 1 < rounds { first.write([bytes[0] + 1, 0xAB]) }
            atFirst.leave()
        }
        first.write([0, 0xAB])
        let echoes = atFirst.chunks.withLock { $0 }
        #expect(echoes == (0..<rounds).map { [UInt8($0), 0xAB] })
        #expect(atSecond.chunks.withLock { $0 } == echoes)
        #expect(!atFirst.overlapped)
        #expect(!atSecond.overlapped)
        first.close()
        #expect(atFirst.closes == 1)
        #expect(atSecond.closes == 1)
        second.write([1, 2, 3])
        #expect(atFirst.chunks.withLock { $0.count } == rounds, "nothing arrives after the close")
    }

    @Test func writersOnSeveralThreadsKeepTheirOrderAndNeverOverlap() throws {
        let (first, second) = LoopbackTransport.pair(towardsSecond: Self.instant, towardsFirst: Self.instant)
        let atSecond = Recorder()
        try second.start { event in
            atSecond.enter()
            atSecond.record(event)
            atSecond.leave()
        }
        try first.start { _ in }
        let writers = 4
        let perWriter = 2_000
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            for n in 0..<perWriter { first.write([UInt8(writer), UInt8(n >> 8), UInt8(n & 0xFF)]) }
        }
        let chunks = atSecond.chunks.withLock { $0 }
        #expect(chunks.count == writers * perWriter)
        for writer in 0..<writers {
            let mine = chunks.filter { $0[0] == UInt8(writer) }.map { Int($0[1]) << 8 | Int($0[2]) }
            #expect(mine == Array(0..<perWriter), "writer \(writer)'s chunks arrive in the order written")
        }
        #expect(!atSecond.overlapped)
    }

    @Test func aCloseMadeWhileBytesAreBeingDeliveredComesAfterThem() throws {
        let (first, second) = LoopbackTransport.pair(towardsSecond: Self.instant, towardsFirst: Self.instant)
        try first.start { _ in }
        let atSecond = Recorder()
        // While [1] is being handed over, the writer sends [2] and closes:
        // [2] waits behind the delivery on the stack, and so must the close.
        try second.start { event in
            atSecond.record(event)
            if case .received([1]) = event {
                first.write([2])
                first.close()
            }
        }
        first.write([1])
        #expect(atSecond.chunks.withLock { $0 } == [[1], [2]])
        #expect(atSecond.closes == 1)
    }

    @Test func bytesWrittenBeforeTheOtherEndStartsArriveWhenItDoes() throws {
        let (first, second) = LoopbackTransport.pair(towardsSecond: Self.instant, towardsFirst: Self.instant)
        try first.start { _ in }
        first.write([1])
        first.write([2, 3])
        let atSecond = Recorder()
        try second.start { atSecond.record($0) }
        #expect(atSecond.chunks.withLock { $0 } == [[1], [2, 3]])
    }
}
