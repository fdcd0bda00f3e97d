/*
 * A stand-in for librdmacm.so.1 used by rcud's tests of the RDMA CM
 * connection manager (verbs::rdma_core::cm) on hosts without RDMA hardware.
 *
 * It is built as ONE library together with the libibverbs stand-in, which it
 * includes below: RCUD_IBVERBS_LIBRARY and RCUD_RDMACM_LIBRARY both name that
 * file, so the CM hands out the same "fakeib0" context (opened with
 * ibv_open_device, as librdmacm does) that the verbs calls then act on, and
 * queue-pair transitions go through the stand-in's ibv_modify_qp and its
 * checks.
 *
 * What it models of librdmacm and the kernel's RDMA CM, for one process:
 * - an event channel is a pollable descriptor, readable while events are
 *   queued; rdma_get_cm_event fails with EAGAIN when it is empty and the
 *   descriptor is non-blocking, and blocks otherwise;
 * - every IP address is an address of fakeib0; listeners are keyed by port
 *   (port 0 picks a free one; a taken port fails with EADDRINUSE);
 * - rdma_resolve_addr / rdma_resolve_route deliver ADDR_RESOLVED and
 *   ROUTE_RESOLVED and set id->verbs and id->port_num;
 * - rdma_create_qp creates the QP with ibv_create_qp on the given domain
 *   (EINVAL if it is not on id->verbs) and moves it to INIT with no remote
 *   rights, as librdmacm does; rdma_accept, and rdma_get_cm_event on the
 *   connector when the accept arrives, move the QPs INIT (rights refreshed)
 *   -> RTR -> RTS with the peer's QPN and PSN; the connector sees
 *   ESTABLISHED, then the listener's side;
 * - connecting to a port nobody listens on gives REJECTED with status 8, the
 *   IB CM reject reason "invalid service ID", as an InfiniBand or RoCE stack
 *   does; rdma_reject, or destroying a request never answered, gives
 *   REJECTED with status 28 ("consumer defined"); a connector giving up
 *   before the answer gives the listener's side REJECTED with status 4;
 * - rdma_disconnect moves the QP to ERR; it, or destroying a connected id,
 *   gives DISCONNECTED to the peer (and to the caller for rdma_disconnect);
 *   the peer's QP is left as it is (a send to the gone QP then fails);
 * - rdma_migrate_id moves the id's queued and future events to a channel.
 *
 * Where real librdmacm would block (destroying an id or migrating it with
 * events not yet acknowledged) or leak (destroying an id that still has a
 * QP, or a channel that still has ids), the stand-in refuses, prints why,
 * and leaves the objects counted by fake_rdmacm_live_objects().
 *
 * Not modelled: synchronous ids (no channel), UD/UDP port spaces, QP-less
 * connections, rdma_create_qp without a domain, backlog limits, timeouts.
 *
 * Knobs (environment, read at first use):
 *   FAKE_RDMACM_NO_DEVICE=1   rdma_create_event_channel fails with ENODEV,
 *                             as without /dev/infiniband/rdma_cm
 *   (FAKE_IBV_DEVICES=0 has the same effect, as with no adapter.)
 *
 * One global lock, taken by every entry point; the libibverbs stand-in is
 * called with it held (its own lock is always taken second).
 */
#include "fake_ibverbs.c"

#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>

/* ---- ABI layouts (rdma_cma.h, LP64) ------------------------------------ */

struct rdma_event_channel {
	int fd;
};

union cm_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr_storage ss;
};

struct rdma_ib_addr {
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint16_t pkey;
};

struct rdma_addr {
	union cm_sockaddr src;
	union cm_sockaddr dst;
	struct rdma_ib_addr ibaddr;
};

struct rdma_route {
	struct rdma_addr addr;
	void *path_rec;
	int num_paths;
};

struct rdma_cm_event;

struct rdma_cm_id {
	struct ibv_context *verbs;
	struct rdma_event_channel *channel;
	void *context;
	struct ibv_qp *qp;
	struct rdma_route route;
	uint32_t ps;
	uint8_t port_num;
	struct rdma_cm_event *event;
	struct ibv_comp_channel *send_cq_channel;
	struct ibv_cq *send_cq;
	struct ibv_comp_channel *recv_cq_channel;
	struct ibv_cq *recv_cq;
	void *srq;
	struct ibv_pd *pd;
	uint32_t qp_type;
};

struct rdma_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint32_t qp_num;
};

struct rdma_ud_param_opaque {
	uint64_t words[7]; /* private data, address vector, QPN, Q_Key */
};

struct rdma_cm_event {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	uint32_t event;
	int status;
	union {
		struct rdma_conn_param conn;
		struct rdma_ud_param_opaque ud;
	} param;
};

/* ---- ABI constants ------------------------------------------------------ */

enum {
	EV_ADDR_RESOLVED, EV_ADDR_ERROR, EV_ROUTE_RESOLVED, EV_ROUTE_ERROR,
	EV_CONNECT_REQUEST, EV_CONNECT_RESPONSE, EV_CONNECT_ERROR, EV_UNREACHABLE,
	EV_REJECTED, EV_ESTABLISHED, EV_DISCONNECTED, EV_DEVICE_REMOVAL,
	EV_MULTICAST_JOIN, EV_MULTICAST_ERROR, EV_ADDR_CHANGE, EV_TIMEWAIT_EXIT,
};
enum { PS_TCP = 0x0106, PS_IB = 0x013F };
enum { ACC_REMOTE_READ = 4, ACC_REMOTE_ATOMIC = 8 };
/* IB CM reject reasons carried as the status of REJECTED. */
enum { REJ_TIMEOUT = 4, REJ_INVALID_SERVICE_ID = 8, REJ_CONSUMER_DEFINED = 28 };

/* The private data an IB CM REQ carries, the most of any message. */
#define MAX_PRIVATE_DATA 92
#define MIN_RNR_TIMER_CM 12
#define CM_ACK_TIMEOUT 14
#define EPHEMERAL_LOW 49152

/* ---- the stand-in's objects --------------------------------------------- */

static pthread_mutex_t cm_big = PTHREAD_MUTEX_INITIALIZER;
static int cm_cfg_read, cm_cfg_no_device;
static long cm_live; /* channels, ids, reported events not acknowledged */

enum cm_state {
	ST_IDLE, ST_BOUND, ST_LISTEN, ST_ADDR, ST_ROUTE,
	ST_CONNECTING, /* active: REQ sent */
	ST_REQUEST,    /* passive: REQ received, not answered */
	ST_ACCEPTED,   /* passive: REP sent, waiting for the connector */
	ST_CONNECTED, ST_DISCONNECTED, ST_REJECTED,
};

/* What one side of a connection tells the other (REQ or REP). */
struct cm_side {
	uint32_t qpn, psn;
	uint8_t responder_resources, initiator_depth, retry_count, rnr_retry_count;
	uint8_t private_data_len;
	uint8_t private_data[MAX_PRIVATE_DATA];
};

struct cm_event;

struct cm_channel {
	struct rdma_event_channel ch;
	int wfd;
	int signalled; /* one byte is in the socket while events are queued */
	struct cm_event *head, *tail;
	long ids;
};

struct cm_id {
	struct rdma_cm_id id;
	enum cm_state state;
	uint16_t port;       /* bound port, host order; 0 = none */
	int holds_verbs;
	struct cm_id *peer;  /* the other end of the connection */
	struct cm_side own;  /* what this side sent */
	struct cm_side remote;
	long unacked;        /* reported events not yet acknowledged */
	struct cm_id *next;
};

struct cm_event {
	struct rdma_cm_event ev;
	struct cm_id *target; /* the id the event is about (ev.id) */
	int is_response;      /* the accept, processed when taken (connector) */
	struct cm_side side;  /* the sender's REQ/REP, for param.conn */
	struct cm_event *next;
};

static struct cm_id *cm_ids;
static struct ibv_context *cm_verbs;
static long cm_verbs_users;
static uint16_t next_ephemeral = EPHEMERAL_LOW;
static uint32_t psn_state = 0x2545f491;

#define CMID(i) ((struct cm_id *)(i))
#define CMCH(c) ((struct cm_channel *)(c))

static void cm_config(void)
{
	const char *s;
	if (cm_cfg_read)
		return;
	cm_cfg_read = 1;
	if ((s = getenv("FAKE_RDMACM_NO_DEVICE")))
		cm_cfg_no_device = atoi(s) != 0;
}

static int fail(int e)
{
	errno = e;
	return -1;
}

static uint32_t new_psn(void)
{
	psn_state ^= psn_state << 13;
	psn_state ^= psn_state >> 17;
	psn_state ^= psn_state << 5;
	return psn_state & 0xffffff;
}

/* The fakeib0 context all ids share, opened on first use and closed when
 * the last id holding it goes (lock held). */
static struct ibv_context *get_verbs(struct cm_id *c)
{
	if (c->holds_verbs)
		return c->id.verbs;
	if (!cm_verbs) {
		int n = 0;
		struct ibv_device **list = ibv_get_device_list(&n);
		if (!list)
			return NULL;
		if (n > 0)
			cm_verbs = ibv_open_device(list[0]);
		ibv_free_device_list(list);
		if (!cm_verbs) {
			errno = ENODEV;
			return NULL;
		}
	}
	cm_verbs_users++;
	c->holds_verbs = 1;
	c->id.verbs = cm_verbs;
	c->id.port_num = 1;
	return cm_verbs;
}

static void put_verbs(struct cm_id *c)
{
	if (!c->holds_verbs)
		return;
	c->holds_verbs = 0;
	c->id.verbs = NULL;
	if (--cm_verbs_users == 0) {
		ibv_close_device(cm_verbs);
		cm_verbs = NULL;
	}
}

/* ---- event channels ------------------------------------------------------ */

/* Keeps the descriptor readable exactly while events are queued. */
static void sync_fd(struct cm_channel *ch)
{
	char b = 1;
	if (ch->head && !ch->signalled) {
		if (send(ch->wfd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
			ch->signalled = 1;
	} else if (!ch->head && ch->signalled) {
		if (recv(ch->ch.fd, &b, 1, MSG_DONTWAIT) == 1)
			ch->signalled = 0;
	}
}

static void append(struct cm_channel *ch, struct cm_event *e)
{
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	sync_fd(ch);
}

/* Queues an event about `target` on its channel (lock held). */
static struct cm_event *queue_event(struct cm_id *target, uint32_t type, int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL; /* lost, as an event the kernel could not allocate */
	e->ev.id = &target->id;
	e->ev.event = type;
	e->ev.status = status;
	e->target = target;
	append(CMCH(target->id.channel), e);
	return e;
}

static void set_conn_param(struct cm_event *e, const struct cm_side *s)
{
	e->side = *s;
	e->ev.param.conn.private_data = s->private_data_len ? e->side.private_data : NULL;
	e->ev.param.conn.private_data_len = s->private_data_len;
	/* The receiver's view: its responder resources are the sender's
	 * initiator depth and the other way round. */
	e->ev.param.conn.responder_resources = s->initiator_depth;
	e->ev.param.conn.initiator_depth = s->responder_resources;
	e->ev.param.conn.retry_count = s->retry_count;
	e->ev.param.conn.rnr_retry_count = s->rnr_retry_count;
	e->ev.param.conn.qp_num = s->qpn;
}

/* Removes the queued events matching (target, is_response or any) from `ch`
 * and returns them as a list (lock held). */
static struct cm_event *take_events(struct cm_channel *ch, struct cm_id *target, int only_response)
{
	struct cm_event *taken = NULL, **tail = &taken;
	struct cm_event **p = &ch->head;
	ch->tail = NULL;
	while (*p) {
		struct cm_event *e = *p;
		if (e->target == target && (!only_response || e->is_response)) {
			*p = e->next;
			e->next = NULL;
			*tail = e;
			tail = &e->next;
		} else {
			ch->tail = e;
			p = &e->next;
		}
	}
	sync_fd(ch);
	return taken;
}

static void free_events(struct cm_event *e)
{
	while (e) {
		struct cm_event *n = e->next;
		free(e);
		e = n;
	}
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	pthread_mutex_lock(&cm_big);
	cm_config();
	pthread_mutex_unlock(&cm_big);
	if (cm_cfg_no_device) {
		errno = ENODEV;
		return NULL;
	}
	/* librdmacm fails the same way when libibverbs lists no adapter. */
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	ibv_free_device_list(list);
	if (n == 0) {
		errno = ENODEV;
		return NULL;
	}
	int sv[2];
	struct cm_channel *ch = calloc(1, sizeof(*ch));
	if (!ch || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		free(ch);
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.fd = sv[0];
	ch->wfd = sv[1];
	pthread_mutex_lock(&cm_big);
	cm_live++;
	pthread_mutex_unlock(&cm_big);
	return &ch->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_channel *ch = CMCH(channel);
	pthread_mutex_lock(&cm_big);
	if (ch->ids) {
		fprintf(stderr, "fake_rdmacm: rdma_destroy_event_channel with %ld ids on it: "
				"left in place\n", ch->ids);
		pthread_mutex_unlock(&cm_big);
		return;
	}
	free_events(ch->head);
	cm_live--;
	pthread_mutex_unlock(&cm_big);
	close(ch->ch.fd);
	close(ch->wfd);
	free(ch);
}

/* Handles an accept taken by the connector: its QP to RTS, ESTABLISHED at
 * the listener's side; or CONNECT_ERROR (lock held). */
static int to_rts(struct cm_id *c, const struct cm_side *remote, uint8_t responder_resources,
		  uint8_t initiator_depth, uint8_t retry_count, uint8_t rnr_retry);

static void process_response(struct cm_event *e)
{
	struct cm_id *a = e->target;
	struct cm_id *p = a->peer;
	a->remote = e->side;
	int rc = EINVAL;
	if (a->state == ST_CONNECTING && p && p->state == ST_ACCEPTED)
		rc = to_rts(a, &a->remote, a->own.responder_resources, a->own.initiator_depth,
			    a->own.retry_count, a->remote.rnr_retry_count);
	if (rc == 0) {
		a->state = ST_CONNECTED;
		p->state = ST_CONNECTED;
		queue_event(p, EV_ESTABLISHED, 0);
		e->ev.event = EV_ESTABLISHED;
		return;
	}
	/* librdmacm moves the QP to error and rejects. */
	if (a->id.qp) {
		struct ibv_qp_attr err = { .qp_state = QPS_ERR };
		ibv_modify_qp(a->id.qp, &err, M_STATE);
	}
	a->state = ST_REJECTED;
	if (p) {
		p->peer = NULL;
		p->state = ST_REJECTED;
		queue_event(p, EV_REJECTED, REJ_CONSUMER_DEFINED);
	}
	a->peer = NULL;
	e->ev.event = EV_CONNECT_ERROR;
	e->ev.status = -rc;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_channel *ch = CMCH(channel);
	pthread_mutex_lock(&cm_big);
	while (!ch->head) {
		pthread_mutex_unlock(&cm_big);
		int flags = fcntl(ch->ch.fd, F_GETFL);
		if (flags < 0)
			return -1;
		if (flags & O_NONBLOCK)
			return fail(EAGAIN);
		struct pollfd pfd = { .fd = ch->ch.fd, .events = POLLIN };
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -1;
		pthread_mutex_lock(&cm_big);
	}
	struct cm_event *e = ch->head;
	ch->head = e->next;
	if (!ch->head)
		ch->tail = NULL;
	e->next = NULL;
	sync_fd(ch);
	if (e->is_response)
		process_response(e);
	e->target->unacked++;
	cm_live++;
	*event = &e->ev;
	pthread_mutex_unlock(&cm_big);
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e = (struct cm_event *)event;
	pthread_mutex_lock(&cm_big);
	e->target->unacked--;
	cm_live--;
	pthread_mutex_unlock(&cm_big);
	free(e);
	return 0;
}

const char *rdma_event_str(uint32_t event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	if (event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

/* ---- ids and addresses ---------------------------------------------------- */

static struct cm_id *new_id(struct cm_channel *ch, void *context, uint32_t ps)
{
	struct cm_id *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id.channel = &ch->ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = QPT_RC;
	c->next = cm_ids;
	cm_ids = c;
	ch->ids++;
	cm_live++;
	return c;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   uint32_t ps)
{
	if (!channel || !id || (ps != PS_TCP && ps != PS_IB))
		return fail(EINVAL); /* synchronous ids and datagrams: not modelled */
	pthread_mutex_lock(&cm_big);
	struct cm_id *c = new_id(CMCH(channel), context, ps);
	pthread_mutex_unlock(&cm_big);
	if (!c)
		return fail(ENOMEM);
	*id = &c->id;
	return 0;
}

static uint16_t addr_port(const union cm_sockaddr *a)
{
	return ntohs(a->sa.sa_family == AF_INET6 ? a->sin6.sin6_port : a->sin.sin_port);
}

static void set_addr_port(union cm_sockaddr *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET6)
		a->sin6.sin6_port = htons(port);
	else
		a->sin.sin_port = htons(port);
}

static int copy_addr(union cm_sockaddr *to, const struct sockaddr *from)
{
	memset(to, 0, sizeof(*to));
	if (from->sa_family == AF_INET)
		memcpy(&to->sin, from, sizeof(to->sin));
	else if (from->sa_family == AF_INET6)
		memcpy(&to->sin6, from, sizeof(to->sin6));
	else
		return EAFNOSUPPORT;
	return 0;
}

static int is_any(const union cm_sockaddr *a)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;
	if (a->sa.sa_family == AF_INET6)
		return memcmp(&a->sin6.sin6_addr, &any6, sizeof(any6)) == 0;
	return a->sin.sin_addr.s_addr == htonl(INADDR_ANY);
}

static int same_ip(const union cm_sockaddr *a, const union cm_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return 0;
	if (a->sa.sa_family == AF_INET6)
		return memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, sizeof(struct in6_addr)) == 0;
	return a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
}

static int port_taken(uint16_t port)
{
	for (struct cm_id *c = cm_ids; c; c = c->next)
		if (c->port == port)
			return 1;
	return 0;
}

/* Binds `c` to `addr`'s port, or a free one for port 0 (lock held). */
static int bind_port(struct cm_id *c, union cm_sockaddr *addr)
{
	uint16_t port = addr_port(addr);
	if (port == 0) {
		for (int tries = 0; tries < 65536 - EPHEMERAL_LOW; tries++) {
			uint16_t p = next_ephemeral;
			next_ephemeral = p == 65535 ? EPHEMERAL_LOW : p + 1;
			if (!port_taken(p)) {
				port = p;
				break;
			}
		}
		if (port == 0)
			return EADDRINUSE;
	} else if (port_taken(port)) {
		return EADDRINUSE;
	}
	set_addr_port(addr, port);
	c->port = port;
	c->id.route.addr.src = *addr;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *c = CMID(id);
	union cm_sockaddr a;
	int rc = copy_addr(&a, addr);
	if (rc)
		return fail(rc);
	pthread_mutex_lock(&cm_big);
	if (c->state != ST_IDLE)
		rc = EINVAL;
	else
		rc = bind_port(c, &a);
	/* A specific address binds the id to its adapter; the wildcard does
	 * not. */
	if (rc == 0 && !is_any(&a) && !get_verbs(c)) {
		rc = errno;
		c->port = 0;
	}
	if (rc == 0)
		c->state = ST_BOUND;
	pthread_mutex_unlock(&cm_big);
	return rc ? fail(rc) : 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *c = CMID(id);
	int rc = 0;
	(void)backlog;
	pthread_mutex_lock(&cm_big);
	if (c->state == ST_IDLE) {
		union cm_sockaddr any = { .sin = { .sin_family = AF_INET } };
		rc = bind_port(c, &any);
	} else if (c->state != ST_BOUND) {
		rc = EINVAL;
	}
	if (rc == 0)
		c->state = ST_LISTEN;
	pthread_mutex_unlock(&cm_big);
	return rc ? fail(rc) : 0;
}

uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
	pthread_mutex_lock(&cm_big);
	uint16_t port = htons(CMID(id)->port);
	pthread_mutex_unlock(&cm_big);
	return port;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
		      int timeout_ms)
{
	struct cm_id *c = CMID(id);
	union cm_sockaddr d, s;
	int rc;
	if (!dst || timeout_ms <= 0)
		return fail(EINVAL);
	if ((rc = copy_addr(&d, dst)))
		return fail(rc);
	/* Every address is on the loopback adapter: the source is the
	 * destination's address unless given. */
	if (src && (rc = copy_addr(&s, src)))
		return fail(rc);
	if (!src) {
		s = d;
		set_addr_port(&s, 0);
	}
	pthread_mutex_lock(&cm_big);
	if (c->state == ST_IDLE)
		rc = bind_port(c, &s);
	else if (c->state != ST_BOUND)
		rc = EINVAL;
	if (rc == 0 && !get_verbs(c))
		rc = errno;
	if (rc == 0) {
		c->id.route.addr.dst = d;
		memcpy(c->id.route.addr.ibaddr.sgid.raw, port_gid, 16);
		memcpy(c->id.route.addr.ibaddr.dgid.raw, port_gid, 16);
		c->id.route.addr.ibaddr.pkey = 0xffff;
		c->state = ST_ADDR;
		queue_event(c, EV_ADDR_RESOLVED, 0);
	}
	pthread_mutex_unlock(&cm_big);
	return rc ? fail(rc) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *c = CMID(id);
	int rc = 0;
	if (timeout_ms <= 0)
		return fail(EINVAL);
	pthread_mutex_lock(&cm_big);
	if (c->state != ST_ADDR) {
		rc = EINVAL;
	} else {
		c->id.route.num_paths = 1;
		c->state = ST_ROUTE;
		queue_event(c, EV_ROUTE_RESOLVED, 0);
	}
	pthread_mutex_unlock(&cm_big);
	return rc ? fail(rc) : 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_id *c = CMID(id);
	pthread_mutex_lock(&cm_big);
	if (!channel) {
		pthread_mutex_unlock(&cm_big);
		return fail(EINVAL);
	}
	if (c->unacked) {
		/* librdmacm would wait for them forever on this thread. */
		fprintf(stderr, "fake_rdmacm: rdma_migrate_id with %ld events not acknowledged\n",
			c->unacked);
		pthread_mutex_unlock(&cm_big);
		return fail(EBUSY);
	}
	struct cm_channel *from = CMCH(c->id.channel), *to = CMCH(channel);
	struct cm_event *moved = take_events(from, c, 0);
	while (moved) {
		struct cm_event *n = moved->next;
		append(to, moved);
		moved = n;
	}
	from->ids--;
	to->ids++;
	c->id.channel = channel;
	pthread_mutex_unlock(&cm_big);
	return 0;
}

/* ---- queue pairs ----------------------------------------------------------- */

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct cm_id *c = CMID(id);
	int rc = 0;
	pthread_mutex_lock(&cm_big);
	/* A domain is required here: librdmacm's default one is not modelled. */
	if (!id->verbs || !pd || pd->context != id->verbs || id->qp || !attr) {
		pthread_mutex_unlock(&cm_big);
		return fail(EINVAL);
	}
	struct ibv_qp *qp = ibv_create_qp(pd, attr);
	if (!qp) {
		rc = errno;
		pthread_mutex_unlock(&cm_big);
		return fail(rc);
	}
	/* librdmacm brings a connected QP to INIT, without remote rights until
	 * the connection is made. */
	struct ibv_qp_attr a = { .qp_state = QPS_INIT, .pkey_index = 0,
				 .port_num = id->port_num, .qp_access_flags = 0 };
	rc = ibv_modify_qp(qp, &a, M_STATE | M_PKEY | M_PORT | M_ACCESS);
	if (rc) {
		ibv_destroy_qp(qp);
		pthread_mutex_unlock(&cm_big);
		return fail(rc);
	}
	c->id.qp = qp;
	c->id.pd = pd;
	c->id.send_cq = attr->send_cq;
	c->id.recv_cq = attr->recv_cq;
	pthread_mutex_unlock(&cm_big);
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	pthread_mutex_lock(&cm_big);
	if (id->qp) {
		int rc = ibv_destroy_qp(id->qp);
		if (rc)
			fprintf(stderr, "fake_rdmacm: ibv_destroy_qp: %d\n", rc);
		id->qp = NULL;
	}
	pthread_mutex_unlock(&cm_big);
}

/* INIT (rights refreshed) -> RTR -> RTS towards `remote`, as librdmacm does
 * with the attributes the kernel's CM computes (lock held). */
static int to_rts(struct cm_id *c, const struct cm_side *remote, uint8_t responder_resources,
		  uint8_t initiator_depth, uint8_t retry_count, uint8_t rnr_retry)
{
	struct ibv_qp *qp = c->id.qp;
	struct ibv_port_attr pa;
	int rc;
	if (!qp)
		return EINVAL;
	memset(&pa, 0, sizeof(pa));
	if ((rc = ibv_query_port(qp->context, c->id.port_num, &pa)))
		return rc;

	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = QPS_INIT;
	a.port_num = c->id.port_num;
	a.qp_access_flags = ACC_REMOTE_WRITE;
	if (responder_resources)
		a.qp_access_flags |= ACC_REMOTE_READ | ACC_REMOTE_ATOMIC;
	if ((rc = ibv_modify_qp(qp, &a, M_STATE | M_ACCESS | M_PKEY | M_PORT)))
		return rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = remote->qpn;
	a.rq_psn = remote->psn;
	a.max_dest_rd_atomic = responder_resources;
	a.min_rnr_timer = MIN_RNR_TIMER_CM;
	a.ah_attr.port_num = c->id.port_num;
	a.ah_attr.dlid = pa.lid;
	if (pa.link_layer == LINK_ETH) {
		/* RoCE: the route's GIDs, always a global route. */
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, c->id.route.addr.ibaddr.dgid.raw, 16);
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 64;
	}
	if ((rc = ibv_modify_qp(qp, &a, M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN |
					    M_MAX_DEST_RD | M_MIN_RNR)))
		return rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = QPS_RTS;
	a.sq_psn = c->own.psn;
	a.timeout = CM_ACK_TIMEOUT;
	a.retry_cnt = retry_count;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = initiator_depth;
	return ibv_modify_qp(qp, &a, M_STATE | M_SQ_PSN | M_TIMEOUT | M_RETRY | M_RNR_RETRY |
					     M_MAX_QP_RD);
}

/* ---- connections ------------------------------------------------------------ */

static void fill_side(struct cm_side *s, struct cm_id *c, const struct rdma_conn_param *p)
{
	memset(s, 0, sizeof(*s));
	s->qpn = c->id.qp ? c->id.qp->qp_num : 0;
	s->psn = new_psn();
	if (p) {
		s->responder_resources = p->responder_resources;
		s->initiator_depth = p->initiator_depth;
		s->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
		s->rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
		s->private_data_len = p->private_data && p->private_data_len
			? (p->private_data_len > MAX_PRIVATE_DATA ? MAX_PRIVATE_DATA
								  : p->private_data_len)
			: 0;
		if (s->private_data_len)
			memcpy(s->private_data, p->private_data, s->private_data_len);
	}
}

static struct cm_id *find_listener(const union cm_sockaddr *dst)
{
	uint16_t port = addr_port(dst);
	for (struct cm_id *c = cm_ids; c; c = c->next)
		if (c->state == ST_LISTEN && c->port == port &&
		    (is_any(&c->id.route.addr.src) || same_ip(&c->id.route.addr.src, dst)))
			return c;
	return NULL;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cm_id *a = CMID(id);
	pthread_mutex_lock(&cm_big);
	if (a->state != ST_ROUTE || !id->qp) {
		pthread_mutex_unlock(&cm_big);
		return fail(EINVAL); /* connections without a QP: not modelled */
	}
	fill_side(&a->own, a, param);
	a->state = ST_CONNECTING;
	struct cm_id *l = find_listener(&id->route.addr.dst);
	struct cm_id *p = l ? new_id(CMCH(l->id.channel), l->id.context, l->id.ps) : NULL;
	if (!p || !get_verbs(p)) {
		/* Nobody listens there: the remote CM answers with a REJ. */
		a->state = ST_REJECTED;
		queue_event(a, EV_REJECTED, REJ_INVALID_SERVICE_ID);
		if (p) {
			CMCH(p->id.channel)->ids--;
			cm_live--;
			cm_ids = p->next;
			free(p);
		}
		pthread_mutex_unlock(&cm_big);
		return 0;
	}
	p->state = ST_REQUEST;
	p->id.route.addr.src = id->route.addr.dst;
	p->id.route.addr.dst = id->route.addr.src;
	p->id.route.addr.ibaddr = id->route.addr.ibaddr;
	p->id.route.num_paths = 1;
	p->remote = a->own;
	p->peer = a;
	a->peer = p;
	struct cm_event *e = queue_event(p, EV_CONNECT_REQUEST, 0);
	if (e) {
		e->ev.listen_id = &l->id;
		set_conn_param(e, &a->own);
	}
	pthread_mutex_unlock(&cm_big);
	return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cm_id *p = CMID(id);
	int rc = 0;
	pthread_mutex_lock(&cm_big);
	if (p->state != ST_REQUEST || !id->qp) {
		pthread_mutex_unlock(&cm_big);
		return fail(EINVAL);
	}
	fill_side(&p->own, p, param);
	rc = to_rts(p, &p->remote, p->own.responder_resources, p->own.initiator_depth,
		    p->remote.retry_count, p->remote.rnr_retry_count);
	if (rc) {
		pthread_mutex_unlock(&cm_big);
		return fail(rc);
	}
	p->state = ST_ACCEPTED;
	struct cm_id *a = p->peer;
	if (a && a->state == ST_CONNECTING) {
		/* The REP: the connector's librdmacm handles it when it takes it. */
		struct cm_event *e = queue_event(a, EV_CONNECT_RESPONSE, 0);
		if (e) {
			e->is_response = 1;
			set_conn_param(e, &p->own);
		}
	}
	pthread_mutex_unlock(&cm_big);
	return 0;
}

/* Ends the connection attempt or connection of `c` as seen by its peer
 * (lock held). */
static void leave_peer(struct cm_id *c, int rejecting_status)
{
	struct cm_id *o = c->peer;
	if (!o)
		return;
	c->peer = NULL;
	o->peer = NULL;
	switch (c->state) {
	case ST_CONNECTING: /* the connector gave up */
		if (o->state == ST_REQUEST || o->state == ST_ACCEPTED) {
			o->state = ST_REJECTED;
			queue_event(o, EV_REJECTED, REJ_TIMEOUT);
		}
		break;
	case ST_REQUEST:
	case ST_ACCEPTED: /* the listener's side refused, or gave up */
		if (o->state == ST_CONNECTING) {
			free_events(take_events(CMCH(o->id.channel), o, 1));
			o->state = ST_REJECTED;
			queue_event(o, EV_REJECTED, rejecting_status);
		}
		break;
	case ST_CONNECTED:
		if (o->state == ST_CONNECTED) {
			o->state = ST_DISCONNECTED;
			queue_event(o, EV_DISCONNECTED, 0);
		}
		break;
	default:
		break;
	}
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct cm_id *p = CMID(id);
	(void)private_data;
	(void)private_data_len;
	pthread_mutex_lock(&cm_big);
	if (p->state != ST_REQUEST) {
		pthread_mutex_unlock(&cm_big);
		return fail(EINVAL);
	}
	leave_peer(p, REJ_CONSUMER_DEFINED);
	p->state = ST_REJECTED;
	pthread_mutex_unlock(&cm_big);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *c = CMID(id);
	pthread_mutex_lock(&cm_big);
	if (c->state != ST_CONNECTED && c->state != ST_DISCONNECTED) {
		pthread_mutex_unlock(&cm_big);
		return fail(EINVAL);
	}
	if (id->qp) {
		struct ibv_qp_attr err = { .qp_state = QPS_ERR };
		ibv_modify_qp(id->qp, &err, M_STATE);
	}
	if (c->state == ST_CONNECTED) {
		leave_peer(c, 0);
		c->state = ST_DISCONNECTED;
		queue_event(c, EV_DISCONNECTED, 0);
	}
	pthread_mutex_unlock(&cm_big);
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *c = CMID(id);
	pthread_mutex_lock(&cm_big);
	if (c->unacked || id->qp) {
		/* librdmacm would wait forever, or leak the QP. */
		fprintf(stderr, "fake_rdmacm: rdma_destroy_id with %s: left in place\n",
			id->qp ? "its queue pair not destroyed" : "events not acknowledged");
		pthread_mutex_unlock(&cm_big);
		return fail(EBUSY);
	}
	struct cm_channel *ch = CMCH(id->channel);
	if (c->state == ST_LISTEN) {
		/* Requests never taken go with the listener, rejected. */
		struct cm_event **p = &ch->head;
		ch->tail = NULL;
		while (*p) {
			struct cm_event *e = *p;
			if (e->ev.event == EV_CONNECT_REQUEST && e->ev.listen_id == id) {
				struct cm_id *child = e->target;
				*p = e->next;
				free(e);
				free_events(take_events(ch, child, 0));
				p = &ch->head; /* the list changed: rescan */
				ch->tail = NULL;
				leave_peer(child, REJ_CONSUMER_DEFINED);
				for (struct cm_id **q = &cm_ids; *q; q = &(*q)->next)
					if (*q == child) {
						*q = child->next;
						break;
					}
				put_verbs(child);
				ch->ids--;
				cm_live--;
				free(child);
			} else {
				ch->tail = e;
				p = &e->next;
			}
		}
		sync_fd(ch);
	}
	leave_peer(c, REJ_CONSUMER_DEFINED);
	free_events(take_events(ch, c, 0));
	for (struct cm_id **q = &cm_ids; *q; q = &(*q)->next)
		if (*q == c) {
			*q = c->next;
			break;
		}
	put_verbs(c);
	ch->ids--;
	cm_live--;
	pthread_mutex_unlock(&cm_big);
	free(c);
	return 0;
}

/* ---- for the tests ------------------------------------------------------- */

/* Channels, ids and taken events not acknowledged, not yet released. */
long fake_rdmacm_live_objects(void)
{
	pthread_mutex_lock(&cm_big);
	long n = cm_live;
	pthread_mutex_unlock(&cm_big);
	return n;
}

#define CM_SIZE(t) { "sizeof " #t, sizeof(struct t) }
#define CM_OFF(t, f) { #t "." #f, offsetof(struct t, f) }

static const struct {
	const char *name;
	size_t value;
} cm_layout[] = {
	CM_SIZE(rdma_event_channel), CM_SIZE(rdma_route),
	CM_SIZE(rdma_cm_id), CM_OFF(rdma_cm_id, verbs), CM_OFF(rdma_cm_id, channel),
	CM_OFF(rdma_cm_id, qp), CM_OFF(rdma_cm_id, route), CM_OFF(rdma_cm_id, ps),
	CM_OFF(rdma_cm_id, port_num), CM_OFF(rdma_cm_id, qp_type),
	CM_SIZE(rdma_conn_param), CM_OFF(rdma_conn_param, private_data_len),
	CM_OFF(rdma_conn_param, responder_resources), CM_OFF(rdma_conn_param, retry_count),
	CM_OFF(rdma_conn_param, rnr_retry_count), CM_OFF(rdma_conn_param, qp_num),
	CM_SIZE(rdma_cm_event), CM_OFF(rdma_cm_event, id), CM_OFF(rdma_cm_event, listen_id),
	CM_OFF(rdma_cm_event, event), CM_OFF(rdma_cm_event, status),
	CM_OFF(rdma_cm_event, param),
};

/* The size ("sizeof rdma_cm_id") or offset ("rdma_cm_id.verbs") named, or -1. */
long fake_rdmacm_layout(const char *name)
{
	for (size_t i = 0; i < sizeof(cm_layout) / sizeof(cm_layout[0]); i++)
		if (strcmp(cm_layout[i].name, name) == 0)
			return (long)cm_layout[i].value;
	return -1;
}
