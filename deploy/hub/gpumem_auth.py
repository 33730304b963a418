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
that long, no longer (docs/instructors.md).
"""

import time

from jupyterhub.auth import PAMAuthenticator
from traitlets import Integer


class ClassAuthenticator(PAMAuthenticator):
    max_failures = Integer(5, help="wrong passwords for one user name before it is locked").tag(config=True)
    lockout = Integer(300, help="seconds a user name stays locked, and the window failures are counted in").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._failures = {}  # user name -> times of recent failed attempts

    def check_allowed(self, username, authentication=None):
        # Admins are allowed even when they are not in an allowed group.
        return username in self.admin_users or super().check_allowed(username, authentication)

    async def authenticate(self, handler, data):
        name = self.normalize_username(data.get("username", ""))
        now = time.monotonic()
        recent = [t for t in self._failures.get(name, []) if now - t < self.lockout]
        if len(recent) >= self.max_failures:
            self._failures[name] = recent
            self.log.warning("gpumem: login for %r refused: %d failed attempts in the last %d s",
                             name, len(recent), self.lockout)
            return None
        result = await super().authenticate(handler, data)
        if result is None:
            recent.append(now)
            self._failures[name] = recent
            if len(self._failures) > 10000:  # many made-up names: forget the old ones
                self._failures = {n: ts for n, ts in self._failures.items() if now - ts[-1] < self.lockout}
        else:
            self._failures.pop(name, None)
        return result
