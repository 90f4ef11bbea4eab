import IAPEndpoint

/// Runs `end` and, over an in-process loopback, this project's other end
/// (`counterpart`) while `body` does the command's work; then closes both,
/// so the RST goes out before the command prints its result or its error.
/// The counterpart starts first: it is the one listening.
func whileRunning<Result>(_ end: MediaEndpoint?, counterpart: MediaEndpoint?,
                          _ body: () async throws -> Result) async throws -> Result {
    do {
        try counterpart?.start()
        try end?.start()
    } catch {
        throw CommandFailure(message: error.description)
    }
    let loops = Task {
        await withTaskGroup(of: Void.self) { group in
            if let end { group.addTask { await end.run() } }
            if let counterpart { group.addTask { await counterpart.run() } }
        }
    }
    let outcome: Swift.Result<Result, any Error>
    do {
        outcome = .success(try await body())
    } catch {
        outcome = .failure(error)
    }
    await end?.close()
    await counterpart?.close()
    loops.cancel()
    return try outcome.get()
}
