Muži na zahradě.
Dítě šlape na kole po chodníku.
Pes si hraje u vody.
Žena stojí u sporáku.
Děti hrají fotbal.
Důchodce listuje novinami.
Na koupališti skáče dívka po hlavě do modré vody.
Dva psi se honí v hlubokém sněhu.
Ve skateparku sjíždí muž v černém tričku U-rampu.
Muž hraje hudbu na ulici.
Chodkyně přechází ulici v hustém dešti.
Tři lidé sedí před kavárnou „U Nováků“ a něco pijí.
Dítě leze na jabloň na zahradě.
Muž brzy ráno chytá ryby na jezeře.
Lidé se dívají na masopustní průvod.
Pes plave vodou a nese klacek.
Cyklista šlape do kopce.
Na trhu veze žena své miminko v kočárku kolem stánků s ovocem.
Dvě holčičky sedí v písku a něco staví.
Kuchař pracuje u pracovní linky.
Vysoko na lešení připevňuje dělník prkno.
Na svatební hostině tančí muž a žena v těsném objetí.
Chlapec jí na lavičce velkou zmrzlinu.
Fotbalový zápas: obránce skluzem atakuje útočníka.
Běžkyně a její pes v parku.
Surfař málem spadne z prkna.
Piknik na trávě.
V obýváku sedí stará paní a plete.
Na zahradě skáčou dva kluci současně na trampolíně.
Někdo si opravuje kolo na chodníku.
Na jezdeckých závodech přeskakuje kůň červeno-bílou bariéru.
Dívka krmí ptáky.
V knihovně pracují studenti.
Žena prodává na trhu ovoce.
Na hlavním nádraží stojí muž v šedém obleku a telefonuje.
Lyžař ve vzduchu.
Děti jdou v řadě.
Pes skáče na louce po frisbee.
Kapela hraje koncert.
Žena fotí.
Muž leze.
Dvě smějící se ženy dělají koláč.
Chlapec v modrém tričku si sám hraje s míčem před domem.
Mladý tatínek uspává své miminko.
Běžci na ulici.
Řemeslník maluje.
Žena vede poníka, na kterém sedí dívka.
Muž se dívá na hodinky, zatímco čeká na autobus.
Turisté s fotoaparáty před kostelem.
Bílý pes leží stočený do klubíčka na pohovce.
Na hřišti se dvě děti houpou o závod.
Žena v pestrých šatech nese velký koš.
Stoupá kouř, zatímco muž u svého stánku griluje maso.
Muž hraje venku basketbal.
Dvojice jde večer podél vody.
Muzikant s kloboukem hraje na harmoniku na náměstí.
Dělníci v rukavicích vykládají těžké bedny.
Dívka se naklání nad dortem a fouká.
Muž s helmou jede na motorce blátem.
Psi něco táhnou sněhem.
Žena sportuje na pláži.
Za horkého dne se děti osvěžují v městské kašně.
Děda ukazuje klukovi, jak se rybaří.
Vrchní spěchá restaurací s plnými talíři.
Muž odpočívá v parku.
Mladá žena v klobouku jede na kole.
Dva hasiči míří proudem vody na hořící dům.
Dívka sedí v trávě s knihou.
Lidé pádlují na vodě.
Před domem někdo odhrabuje sníh.
Šachisté v parku.
Dítě kreslí křídou po zemi.
Tři psi táhnou ženu po chodníku.
Zaměstnanec technických služeb shrabuje spadané listí.
Dospívající kluk skáče z vysoké skály.
Turisté stoupají po kamenité cestě k vrcholu.
Žena zpívá se zavřenýma očima.
Prodavač veze na vozíku zelí a brambory.
Lidé se drží tyčí v plném vagonu.
Malý pes dovádí na letní louce.
