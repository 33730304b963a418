"""ClassAuthenticator: JupyterHub's PAMAuthenticator for a class.

Who may log in: the members of the allowed Unix groups (by default the
group `students`, which deploy/hub/add-students.sh fills) and the admins
named at install (GPUMEM_ADMINS). Any other account of the machine, even
with the right password, is refused. JupyterHub 3.0's own allowed_groups
checks supplementary membership only (the group's member list), so the
roster script adds students to it with useradd -G.

Failed logins are throttled per user name: after max_failures wrong
passwords within lockout seconds, every attempt on that name is refused
for lockout seconds, the right password included, without asking PAM. A
classmate who types wrong passwords on purpose can lock a student out for
that long, no longer (docs/instructors.md). An admin's name is never
locked: it is rate-limited instead, one attempt every admin_interval
seconds while it would be locked, so a student cannot keep the instructor
out.

PAM is slow when it refuses (pam_faildelay waits about 2 s after every
wrong password), and JupyterHub 3.0 runs it on a single thread: 20 wrong
logins at once with made-up names made a classmate's login wait 101 s.
Here PAM runs on pam_threads threads, and one source address may have at
most per_source attempts in PAM at a time; more from that address are
refused at once, so a flood from one place holds per_source threads and
every other address keeps the rest.
"""

import time
from concurrent.futures import ThreadPoolExecutor

from jupyterhub.auth import PAMAuthenticator
from traitlets import Integer, default


class ClassAuthenticator(PAMAuthenticator):
    max_failures = Integer(5, help="wrong passwords for one user name before it is locked").tag(config=True)
    lockout = Integer(300, help="seconds a user name stays locked, and the window failures are counted in").tag(config=True)

    admin_interval = Integer(10, help="seconds between attempts on an admin's name while it would be locked").tag(config=True)
    pam_threads = Integer(8, help="PAM conversations at once").tag(config=True)
    per_source = Integer(2, help="PAM conversations at once from one source address").tag(config=True)

    @default("executor")
    def _default_executor(self):
        return ThreadPoolExecutor(self.pam_threads)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._failures = {}  # user name -> times of recent failed attempts
        self._in_pam = {}  # source address -> attempts now in PAM
        self._last_admin_try = {}  # admin name -> time of its last attempt while throttled

    def check_allowed(self, username, authentication=None):
        # Admins are allowed even when they are not in an allowed group.
        return username in self.admin_users or super().check_allowed(username, authentication)

    async def authenticate(self, handler, data):
        name = self.normalize_username(data.get("username", ""))
        now = time.monotonic()
        recent = [t for t in self._failures.get(name, []) if now - t < self.lockout]
        if len(recent) >= self.max_failures:
            self._failures[name] = recent
            if name not in self.admin_users:
                self.log.warning("gpumem: login for %r refused: %d failed attempts in the last %d s",
                                 name, len(recent), self.lockout)
                return None
            if now - self._last_admin_try.get(name, -self.admin_interval) < self.admin_interval:
                self.log.warning("gpumem: login for the admin %r refused: one attempt every %d s after %d failures",
                                 name, self.admin_interval, len(recent))
                return None
            self._last_admin_try[name] = now
        source = getattr(getattr(handler, "request", None), "remote_ip", None) or "?"
        if self._in_pam.get(source, 0) >= self.per_source:
            self.log.warning("gpumem: login for %r from %s refused: %d attempts from there already in progress",
                             name, source, self.per_source)
            return None
        self._in_pam[source] = self._in_pam.get(source, 0) + 1
        try:
            result = await super().authenticate(handler, data)
        finally:
            self._in_pam[source] -= 1
            if not self._in_pam[source]:
                del self._in_pam[source]
        if result is None:
            recent.append(now)
            self._failures[name] = recent
            if len(self._failures) > 10000:  # many made-up names: forget the old ones
                self._failures = {n: ts for n, ts in self._failures.items() if now - ts[-1] < self.lockout}
        else:
            self._failures.pop(name, None)
        return result
