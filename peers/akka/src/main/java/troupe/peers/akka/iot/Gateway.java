// Owns a server's entry point, /user/gateway (protocol rules 1, 2, 6, 7 in Protocol.java): it
// keeps the hash ring over the live servers from Akka Cluster membership events, answers a
// device's Hello (redirect, reject, or start its Owner), stands owners down when the ring moves
// their device or Distributed Data shows a newer incarnation elsewhere, answers the collector's
// GetTotals, and says `ready` once this server and every other one are Up in the cluster.
package troupe.peers.akka.iot;

import akka.actor.Address;
import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import akka.cluster.ClusterEvent;
import akka.cluster.Member;
import akka.cluster.ddata.LWWMap;
import akka.cluster.ddata.typed.javadsl.DistributedData;
import akka.cluster.ddata.typed.javadsl.Replicator;
import akka.cluster.ddata.typed.javadsl.ReplicatorMessageAdapter;
import akka.cluster.typed.Cluster;
import akka.cluster.typed.Subscribe;
import akka.routing.ConsistentHash;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import troupe.peers.akka.iot.Protocol.DeviceStatus;
import troupe.peers.akka.iot.Protocol.ToGateway;
import troupe.peers.akka.iot.Protocol.ToOwner;

final class Gateway extends AbstractBehavior<ToGateway> {
    /** Virtual nodes per server on the hash ring (iot contract rule 2, as Troupe's). */
    static final int VIRTUAL_NODES = 128;

    private record ClusterChanged(ClusterEvent.ClusterDomainEvent event) implements ToGateway {}

    private record OwnerStopped(int device, ActorRef<ToOwner> owner) implements ToGateway {}

    private record StatusChanged(Replicator.SubscribeResponse<LWWMap<String, DeviceStatus>> rsp)
            implements ToGateway {}

    private record Tracked(ActorRef<ToOwner> owner, long incarnation, ActorRef<Protocol.ToDevice> device) {}

    private final ServerState st;
    private final Address selfAddress;
    /** Up members -> their server index; unreachable addresses; the ring over the difference. */
    private final Map<Address, Integer> up = new HashMap<>();
    private final Set<Address> unreachable = new HashSet<>();
    private ConsistentHash<String> ring;
    private int ringSize;
    private boolean saidReady;
    private long spawned;
    private final Map<Integer, Tracked> tracked = new HashMap<>();

    static Behavior<ToGateway> create(ServerState st) {
        return Behaviors.setup(ctx -> new Gateway(ctx, st));
    }

    private Gateway(ActorContext<ToGateway> ctx, ServerState st) {
        super(ctx);
        this.st = st;
        Cluster cluster = Cluster.get(ctx.getSystem());
        this.selfAddress = cluster.selfMember().address();
        ActorRef<ClusterEvent.MemberEvent> members = ctx.messageAdapter(ClusterEvent.MemberEvent.class, ClusterChanged::new);
        ActorRef<ClusterEvent.ReachabilityEvent> reach =
                ctx.messageAdapter(ClusterEvent.ReachabilityEvent.class, ClusterChanged::new);
        cluster.subscriptions().tell(Subscribe.create(members, ClusterEvent.MemberEvent.class));
        cluster.subscriptions().tell(Subscribe.create(reach, ClusterEvent.ReachabilityEvent.class));
        ReplicatorMessageAdapter<ToGateway, LWWMap<String, DeviceStatus>> replicator = new ReplicatorMessageAdapter<>(
                ctx, DistributedData.get(ctx.getSystem()).replicator(), Duration.ofSeconds(10));
        replicator.subscribe(Owner.STATUS_KEY, StatusChanged::new);
    }

    @Override
    public Receive<ToGateway> createReceive() {
        return newReceiveBuilder()
                .onMessage(Protocol.Hello.class, this::onHello)
                .onMessage(Protocol.GetTotals.class, g -> {
                    g.replyTo().tell(new Protocol.Totals(st.server, st.reports()));
                    return this;
                })
                .onMessage(ClusterChanged.class, this::onCluster)
                .onMessage(OwnerStopped.class, this::onOwnerStopped)
                .onMessage(StatusChanged.class, this::onStatus)
                .build();
    }

    private static int serverIndex(Member m) {
        for (String role : m.getRoles()) {
            if (role.startsWith("server-")) {
                try {
                    return Integer.parseInt(role.substring("server-".length()));
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }

    private Behavior<ToGateway> onCluster(ClusterChanged c) {
        ClusterEvent.ClusterDomainEvent e = c.event();
        if (e instanceof ClusterEvent.MemberUp up1) {
            int s = serverIndex(up1.member());
            if (s >= 0) {
                up.put(up1.member().address(), s);
            }
        } else if (e instanceof ClusterEvent.MemberEvent me && !(e instanceof ClusterEvent.MemberJoined)
                && !(e instanceof ClusterEvent.MemberWeaklyUp)) {
            // Left, exited, downed, removed: no longer serving.
            up.remove(me.member().address());
            unreachable.remove(me.member().address());
        } else if (e instanceof ClusterEvent.UnreachableMember u) {
            unreachable.add(u.member().address());
        } else if (e instanceof ClusterEvent.ReachableMember r) {
            unreachable.remove(r.member().address());
        }
        rebuildRing();
        // Contract rule 11: ready once this server is Up together with every other server.
        if (!saidReady && up.containsKey(selfAddress) && up.size() >= st.cfg.servers()) {
            saidReady = true;
            if (!st.restarted) {
                st.node.events.emit("ready", ",\"what\":\"servers\",\"count\":1");
            }
            Node.sayReady();
        }
        return this;
    }

    private void rebuildRing() {
        TreeMap<Integer, String> live = new TreeMap<>();
        for (Map.Entry<Address, Integer> m : up.entrySet()) {
            if (!unreachable.contains(m.getKey())) {
                live.put(m.getValue(), Protocol.serverName(m.getValue()));
            }
        }
        ring = live.isEmpty() ? null : ConsistentHash.create(live.values(), VIRTUAL_NODES);
        ringSize = live.size();
        st.liveServers = Math.max(1, ringSize);
        // Rule 6: devices the ring now gives to another server go back to the seeds.
        for (Map.Entry<Integer, Tracked> t : tracked.entrySet()) {
            if (ownerOf(t.getKey()) != st.server) {
                t.getValue().owner().tell(new Owner.Retire(true));
            }
        }
    }

    /** The ring's owner of device k, or -1 while the ring is empty. */
    private int ownerOf(int k) {
        if (ring == null) {
            return -1;
        }
        String name = ring.nodeFor(Protocol.deviceName(k));
        return Integer.parseInt(name.substring("server-".length()));
    }

    private Behavior<ToGateway> onHello(Protocol.Hello h) {
        if (h.version() != Protocol.VERSION) {
            st.node.errors.incrementAndGet();
            String reason = "protocol version " + h.version() + " is not supported; this server speaks "
                    + Protocol.VERSION;
            System.err.println("akka iot server-" + st.server + ": rejecting device " + h.device() + ": " + reason);
            h.replyTo().tell(new Protocol.Rejected(reason));
            return this;
        }
        int owner = ownerOf(h.device());
        if (owner < 0 || ringSize == 0) {
            return this; // not Up yet: the device's Hello times out and it tries again
        }
        if (owner != st.server) {
            h.replyTo().tell(new Protocol.Redirect(owner));
            return this;
        }
        Tracked t = tracked.get(h.device());
        if (t != null) {
            if (t.device().equals(h.replyTo()) || t.incarnation() > h.incarnation()) {
                return this; // a repeated Hello (its owner is asking already), or a stale one
            }
            t.owner().tell(new Owner.Retire(false)); // the device restarted: its old owner goes
        }
        Owner.Spec spec = new Owner.Spec(h.device(), h.incarnation(), h.startUs(), h.fresh(), h.replyTo());
        ActorRef<ToOwner> ref = getContext().spawn(Owner.create(st, spec),
                "owner-" + h.device() + "-" + h.incarnation() + "-" + (spawned++));
        getContext().watchWith(ref, new OwnerStopped(h.device(), ref));
        tracked.put(h.device(), new Tracked(ref, h.incarnation(), h.replyTo()));
        return this;
    }

    private Behavior<ToGateway> onOwnerStopped(OwnerStopped o) {
        Tracked t = tracked.get(o.device());
        if (t != null && t.owner().equals(o.owner())) {
            tracked.remove(o.device());
        }
        return this;
    }

    private Behavior<ToGateway> onStatus(StatusChanged c) {
        if (!(c.rsp() instanceof Replicator.Changed<LWWMap<String, DeviceStatus>> changed)) {
            return this;
        }
        Map<String, DeviceStatus> all = changed.get(Owner.STATUS_KEY).getEntries();
        // Rule 6: another server owns a newer incarnation of a device tracked here: this owner
        // talks to a dead incarnation, so it goes quietly.
        for (Map.Entry<Integer, Tracked> t : tracked.entrySet()) {
            DeviceStatus s = all.get(Protocol.deviceName(t.getKey()));
            if (s != null && s.server() != st.server && s.incarnation() > t.getValue().incarnation()) {
                t.getValue().owner().tell(new Owner.Retire(false));
            }
        }
        return this;
    }
}
