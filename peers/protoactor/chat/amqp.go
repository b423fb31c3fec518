// The `amqp://` sink of the event emitter (events.md, "Transport"): every line the writer
// goroutine hands it becomes one AMQP 0-9-1 message, published with RabbitMQ's Go client
// (github.com/rabbitmq/amqp091-go) to the topic exchange `troupe.events`, routing key = the run
// id. It exists so this peer's events can travel through RabbitMQ like Troupe's own.
//
// Rules:
//  1. The exchange is declared as the lab's collector declares it (topic, not durable); lines are
//     published with `mandatory` and publisher confirms on, in the order they are written, on
//     one channel, by the emitter's writer goroutine only (never an actor).
//  2. Connecting (TCP, handshake, channel, declaration, confirm mode) is bounded by
//     amqpConnectTimeout; a failure is an error naming the URL with its password hidden.
//  3. At most amqpMaxUnconfirmed lines await a confirm; the next publish waits for them (the
//     writer goroutine waits, while the actors' bounded channel absorbs or drops and counts).
//  4. Close waits at most amqpConfirmTimeout for every confirm, then closes the connection; a
//     line the broker refused (nack) or could not route (returned: no collector bound to the run
//     id), or a confirm that did not come, makes Close an error, so the run fails rather than
//     losing events silently.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const (
	amqpExchange        = "troupe.events"
	amqpConnectTimeout  = 8 * time.Second
	amqpConfirmTimeout  = 30 * time.Second
	amqpMaxUnconfirmed  = 8192
	amqpReturnsCapacity = 1024
)

// eventSink is where the emitter's writer goroutine puts whole lines: a file or RabbitMQ.
type eventSink interface {
	Write(p []byte) (int, error)
	Close() error
}

// openSink opens TROUPE_EVENTS: an `amqp://` URL, or a file path (appended to).
func openSink(target, run string) (eventSink, error) {
	if strings.HasPrefix(target, "amqp://") {
		return dialAmqp(target, run)
	}
	return os.OpenFile(target, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
}

// redactURL hides the password of an URL's user, for messages.
func redactURL(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.User == nil {
		if i := strings.Index(target, "://"); i >= 0 {
			if at := strings.LastIndex(target, "@"); at > i {
				return target[:i+3] + "***" + target[at:]
			}
		}
		return target
	}
	if _, has := u.User.Password(); has {
		return u.Scheme + "://" + u.User.Username() + ":***@" + u.Host + u.EscapedPath()
	}
	return target
}

type amqpSink struct {
	conn     *amqp.Connection
	ch       *amqp.Channel
	key      string
	url      string // redacted
	pending  []*amqp.DeferredConfirmation
	nacked   int
	returned atomic.Int64
	drained  chan struct{} // closed when the returns channel is
	sent     int
}

func dialAmqp(target, run string) (*amqpSink, error) {
	shown := redactURL(target)
	fail := func(what error) error {
		return fmt.Errorf("cannot reach the RabbitMQ broker at %s: %v; start one with `bash scripts/rabbitmq.sh "+
			"start DIR` (install it with `bash scripts/install-rabbitmq.sh`) and pass the URL it prints", shown, what)
	}
	if len(run) > 255 {
		return nil, fmt.Errorf("run id %q is longer than 255 bytes, the most an AMQP routing key holds", run)
	}
	type opened struct {
		s   *amqpSink
		err error
	}
	done := make(chan opened, 1)
	var conn atomic.Pointer[amqp.Connection]
	go func() {
		c, err := amqp.DialConfig(target, amqp.Config{
			Dial:       amqp.DefaultDial(amqpConnectTimeout),
			Properties: amqp.Table{"connection_name": "troupe protoactor peer events"},
		})
		if err != nil {
			done <- opened{err: err}
			return
		}
		conn.Store(c)
		ch, err := c.Channel()
		if err == nil {
			err = ch.ExchangeDeclare(amqpExchange, "topic", false, false, false, false, nil)
		}
		if err == nil {
			err = ch.Confirm(false)
		}
		if err != nil {
			c.Close()
			done <- opened{err: err}
			return
		}
		s := &amqpSink{conn: c, ch: ch, key: run, url: shown, drained: make(chan struct{})}
		returns := ch.NotifyReturn(make(chan amqp.Return, amqpReturnsCapacity))
		go func() {
			for range returns {
				s.returned.Add(1)
			}
			close(s.drained)
		}()
		done <- opened{s: s}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, fail(o.err)
		}
		return o.s, nil
	case <-time.After(amqpConnectTimeout):
		if c := conn.Load(); c != nil {
			c.Close()
		}
		return nil, fail(fmt.Errorf("no answer within %v", amqpConnectTimeout))
	}
}

func (s *amqpSink) fail(what string) error {
	return fmt.Errorf("amqp publisher to %s: %s", s.url, what)
}

// Write publishes every line of p (whole lines, each ended by '\n') as one message (rules 1, 3).
func (s *amqpSink) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(line) == 0 {
			continue
		}
		if len(s.pending) >= amqpMaxUnconfirmed {
			if err := s.confirmAll(); err != nil {
				return 0, err
			}
		}
		body := make([]byte, len(line))
		copy(body, line)
		dc, err := s.ch.PublishWithDeferredConfirmWithContext(context.Background(), amqpExchange, s.key, true, false,
			amqp.Publishing{Body: body})
		if err != nil {
			return 0, s.fail("publishing: " + err.Error())
		}
		s.pending = append(s.pending, dc)
		s.sent++
	}
	return len(p), nil
}

// confirmAll waits for the confirms of every line published so far (rule 3).
func (s *amqpSink) confirmAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), amqpConfirmTimeout)
	defer cancel()
	for i, dc := range s.pending {
		acked, err := dc.WaitContext(ctx)
		if err != nil {
			n := len(s.pending) - i
			s.pending = nil
			if errors.Is(err, context.DeadlineExceeded) {
				return s.fail(fmt.Sprintf("%d lines not confirmed by the broker within %v", n, amqpConfirmTimeout))
			}
			return s.fail("waiting for confirms: " + err.Error())
		}
		if !acked {
			s.nacked++
		}
	}
	s.pending = s.pending[:0]
	return nil
}

// Close takes every confirm, then closes the channel (which ends the returns channel, so the
// count of returned lines is complete) and the connection (rule 4).
func (s *amqpSink) Close() error {
	err := s.confirmAll()
	_ = s.ch.Close()
	select {
	case <-s.drained:
	case <-time.After(amqpConnectTimeout):
	}
	_ = s.conn.Close()
	if err != nil {
		return err
	}
	if ret := s.returned.Load(); s.nacked > 0 || ret > 0 {
		return s.fail(fmt.Sprintf("of %d lines the broker refused %d and could not route %d (is a collector bound "+
			"to run id %q? start it before the workload)", s.sent, s.nacked, ret, s.key))
	}
	return nil
}
