// Owns the table the fault injector aims at: for every (group, slot) the server's ActorRef and
// whether that server is alive. Exists because the injector runs on its own thread, outside the
// actor system, and needs to pick "the next live slot" without asking the measured actors.
// Writers: each sub-supervisor (refs at spawn; alive=0 when it sees a child terminate for good)
// and the injector (alive=0 as it sends a kill that will not be followed by a restart).
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

final class Targets {
    final int groups;
    final int perGroup;
    private final AtomicReferenceArray<ActorRef<Server.Command>> refs;
    private final AtomicIntegerArray alive;

    Targets(int groups, int perGroup) {
        this.groups = groups;
        this.perGroup = perGroup;
        this.refs = new AtomicReferenceArray<>(groups * perGroup);
        this.alive = new AtomicIntegerArray(groups * perGroup);
    }

    void started(int group, int slot, ActorRef<Server.Command> ref) {
        refs.set(group * perGroup + slot, ref);
        alive.set(group * perGroup + slot, 1);
    }

    void dead(int group, int slot) {
        alive.set(group * perGroup + slot, 0);
    }

    boolean isAlive(int group, int slot) {
        return alive.get(group * perGroup + slot) == 1;
    }

    ActorRef<Server.Command> ref(int group, int slot) {
        return refs.get(group * perGroup + slot);
    }

    /** The first live slot of {@code group} at or after {@code slot}, wrapping; -1 if none. */
    int nextLive(int group, int slot) {
        for (int k = 0; k < perGroup; k++) {
            int s = (slot + k) % perGroup;
            if (isAlive(group, s)) {
                return s;
            }
        }
        return -1;
    }
}
