-- Certificate authenticators obtained through enrollment: the third-party CA they came through
-- (ottca, CA auto-enrollment; re-enroll gives ottca again, deleting the CA deletes them), and a
-- certificate issued by extension that waits for extend-verify before it replaces the current one.
alter table authenticators add column ca_id text;
alter table authenticators add column unverified_cert_pem text;
alter table authenticators add column unverified_cert_fingerprint text;
create index authenticators_ca on authenticators (ca_id) where ca_id is not null;
