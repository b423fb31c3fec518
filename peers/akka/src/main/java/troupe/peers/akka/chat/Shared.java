// Owns what every actor of the one chat process shares: the event writer and the counters the
// main thread, the throughput counter and the injector read (broadcasts received, chats
// registered, clients joined, errors, faults carried out or skipped). Exists because the lab's
// figures are process totals; actors only ever increment these (no actor waits on them).
package troupe.peers.akka.chat;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import troupe.peers.akka.common.EventWriter;

final class Shared {
    final ChatConfig cfg;
    final EventWriter events;
    /** Broadcasts received by the clients. */
    final LongAdder received = new LongAdder();
    /** Counted down once per chat, on its first registration with discovery. */
    final CountDownLatch registered;
    /** Counted down once per client, on its first join. */
    final CountDownLatch joined;
    /** Clients that gave up, unsupported schedule actions, and other failures. */
    final AtomicLong errors = new AtomicLong();
    /**
     * Set when this process's part of the run is over (the window ended): a node leaving the
     * cluster as its system terminates makes remote watches fire, and those are no faults.
     */
    volatile boolean stopping;
    final AtomicLong injected = new AtomicLong();
    final AtomicLong skipped = new AtomicLong();
    /** Set by discovery in the process that hosts it. */
    volatile boolean hostsDiscovery;
    /** lookup = park: lookups discovery parked, answered by a registration, timed out. */
    final AtomicLong parkedLookups = new AtomicLong();
    final AtomicLong parkedByRegistration = new AtomicLong();
    final AtomicLong parkedTimedOut = new AtomicLong();
    /** Incarnations started per chat (survives the chat's restarts). */
    final AtomicIntegerArray starts;

    Shared(ChatConfig cfg, EventWriter events) {
        this(cfg, events, cfg.chats(), cfg.clients());
    }

    /** For a process holding {@code chats} of the chats and {@code clients} of the clients. */
    Shared(ChatConfig cfg, EventWriter events, int chats, long clients) {
        this.cfg = cfg;
        this.events = events;
        this.registered = new CountDownLatch(chats);
        this.joined = new CountDownLatch((int) clients);
        this.starts = new AtomicIntegerArray(cfg.chats());
    }

    static String topic(int chat) {
        return "chat-" + chat;
    }
}
