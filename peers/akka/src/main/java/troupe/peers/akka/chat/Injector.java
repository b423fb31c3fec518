// Owns the chat fault injector: one thread in the JVM (outside the actor dispatcher) walking the
// lab's schedule.jsonl, the truth for every runtime in a comparison. At start + at_ms it asks
// discovery (an ask, not blocking this thread) for the chat registered under `chat-<group>`
// now; if there is none (the chat is restarting) the action is skipped and counted, else it
// emits fault_injected and hurts that incarnation: `kill` stops it brutally through the classic
// API (no code of the chat runs, as in seed 000), `error` sends it the poison message, `cpu` /
// `ram` the stress message.
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.Adapter;
import akka.actor.typed.javadsl.AskPattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.common.Schedule.Action;

final class Injector implements Runnable {
    private final List<Action> actions;
    private final Shared shared;
    private final ActorSystem<?> system;
    private final ActorRef<Discovery.Command> discovery;
    private final long startNanos;
    private volatile boolean stop;
    final AtomicLong afterWindow = new AtomicLong();

    Injector(List<Action> actions, Shared shared, ActorSystem<?> system,
             ActorRef<Discovery.Command> discovery, long startNanos) {
        this.actions = actions;
        this.shared = shared;
        this.system = system;
        this.discovery = discovery;
        this.startNanos = startNanos;
    }

    void stop() {
        stop = true;
    }


    @Override
    public void run() {
        long windowMs = shared.cfg.durationS() * 1000L;
        for (Action a : actions) {
            if (a.atMs() < 0 || a.atMs() >= windowMs) {
                afterWindow.incrementAndGet();
                continue;
            }
            long deadline = startNanos + a.atMs() * 1_000_000L;
            long now;
            while ((now = System.nanoTime()) < deadline) {
                if (stop) {
                    return;
                }
                LockSupport.parkNanos(Math.min(deadline - now, 50_000_000L));
            }
            if (stop) {
                return;
            }
            hurt(a);
        }
    }

    private void hurt(Action a) {
        if (a.group() < 0 || a.group() >= shared.cfg.chats()
                || !List.of("kill", "error", "cpu", "ram").contains(a.kind())) {
            shared.errors.incrementAndGet();
            shared.skipped.incrementAndGet();
            System.err.println("akka chat: schedule action " + a + " names no chat or an unknown kind; skipped");
            return;
        }
        String target = Shared.topic(a.group());
        AskPattern.<Discovery.Command, Discovery.Found>ask(discovery,
                        reply -> new Discovery.Find(target, reply), Duration.ofSeconds(5), system.scheduler())
                .whenComplete((found, err) -> {
                    if (err != null || found.chat() == null) {
                        shared.skipped.incrementAndGet();
                        return;
                    }
                    ActorRef<Chat.Command> chat = found.chat();
                    // Stamped before the fault, so no detection can precede it.
                    shared.events.emit("fault_injected", ",\"id\":" + Json.quote(a.id())
                            + ",\"target\":\"" + target + "\",\"kind\":\"" + a.kind() + "\"");
                    switch (a.kind()) {
                        case "kill" -> Adapter.toClassic(system).stop(Adapter.toClassic(chat));
                        case "error" -> chat.tell(Chat.Poison.INSTANCE);
                        case "cpu" -> chat.tell(new Chat.Stress(shared.cfg.stressMs(), 0));
                        default -> chat.tell(new Chat.Stress(0, shared.cfg.stressMb()));
                    }
                    shared.injected.incrementAndGet();
                });
    }
}
